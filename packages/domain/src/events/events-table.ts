/**
 * The `events` table's row, the one owner of its shape (deploy/clickhouse/migrations/0001_events.sql):
 * its columns, the TabSeparated line the processor's writer inserts, and a row read back in API
 * terms for the gateway's readers.
 */
import type { EventRecord, EventSource } from '@ingest/schemas';
import { AppError } from '@ingest/platform';

/** The `events` columns in the order of toEventLine's fields. */
export const EVENT_COLUMNS = [
  'account_id',
  'event_id',
  'event_name',
  'email',
  'domain',
  'event_time',
  'event_time_ms',
  'received_at',
  'received_at_ms',
  'properties',
  'source',
  'job_id',
  'inserted_at',
] as const;

/**
 * An event as one TabSeparated line of the `events` table (the storage hot path): DateTimes as UTC
 * `YYYY-MM-DD hh:mm:ss` text, which both 18.16 and current servers read into DateTime('UTC').
 * TabSeparated needs only backslash, tab and newline escaped, so the properties' JSON text goes
 * in as it is; JSONEachRow escaped every quote of it again and cost a quarter of the writer's CPU.
 * Every column is sent (18.16 gives omitted columns zero values, not DEFAULTs).
 * Lone UTF-16 surrogates need no care here: the UTF-8 encoder turns them into U+FFFD.
 */
export function toEventLine(record: EventRecord, insertedAtMs: number): string {
  return [
    tsv(record.accountId),
    tsv(record.eventId),
    tsv(record.eventName),
    tsv(record.email ?? ''),
    tsv(record.domain ?? ''),
    eventTime(record.timestampMs),
    String(Math.trunc(record.timestampMs)),
    receivedAt(record.receivedAtMs),
    String(Math.trunc(record.receivedAtMs)),
    tsv(JSON.stringify(record.properties)),
    record.source,
    tsv(record.jobId ?? ''),
    insertedAt(insertedAtMs),
  ].join('\t');
}

const NEEDS_ESCAPE = /[\\\t\n\r]/;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

function tsv(value: string): string {
  return NEEDS_ESCAPE.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c] ?? c) : value;
}

/** UTC `YYYY-MM-DD hh:mm:ss`, remembering the last second (rows of a batch mostly share it). */
function secondFormatter(): (epochMs: number) => string {
  let cachedSecond = Number.NaN;
  let cachedText = '';
  return (epochMs) => {
    const second = Math.floor(epochMs / 1000);
    if (second !== cachedSecond) {
      cachedSecond = second;
      cachedText = new Date(second * 1000).toISOString().slice(0, 19).replace('T', ' ');
    }
    return cachedText;
  };
}

const eventTime = secondFormatter();
const receivedAt = secondFormatter();
const insertedAt = secondFormatter();

/** An event as the pipeline stored it (the `events` table), in API terms. */
export interface StoredEventRecord {
  eventId: string;
  eventName: string;
  email: string | null;
  domain: string | null;
  timestampMs: number;
  receivedAtMs: number;
  properties: Record<string, unknown>;
  source: EventSource;
  jobId: string | null;
}

/** The columns a read of the `events` table selects to give an event back; Int64 columns arrive as strings. */
export interface EventRowOut {
  event_id: string;
  event_name: string;
  email: string;
  domain: string;
  event_time_ms: string | number;
  received_at_ms: string | number;
  properties: string;
  source: EventSource;
  job_id: string;
}

/** Pure: a row of the `events` table back to API terms ('' is how 18.16-safe columns say null). */
export function fromEventRow(row: EventRowOut): StoredEventRecord {
  return {
    eventId: row.event_id,
    eventName: row.event_name,
    email: row.email === '' ? null : row.email,
    domain: row.domain === '' ? null : row.domain,
    timestampMs: Number(row.event_time_ms),
    receivedAtMs: Number(row.received_at_ms),
    properties: parseProperties(row.properties, row.event_id),
    source: row.source,
    jobId: row.job_id === '' ? null : row.job_id,
  };
}

function parseProperties(text: string, eventId: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new AppError('stored_event_corrupt', `stored properties of event ${eventId} are not JSON`, { cause: err });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new AppError('stored_event_corrupt', `stored properties of event ${eventId} are not a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

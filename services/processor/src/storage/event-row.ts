import type { EventRecord } from '@ingest/schemas';

/** A row of the `events` table (deploy/clickhouse/migrations/0001_events.sql). */
export type EventRow = {
  account_id: string;
  event_id: string;
  event_name: string;
  email: string;
  domain: string;
  event_time: number;
  event_time_ms: number;
  received_at: number;
  received_at_ms: number;
  properties: string;
  source: EventRecord['source'];
  job_id: string;
  inserted_at: number;
};

/**
 * Every column is sent (18.16 gives omitted keys zero values, not DEFAULTs) and DateTimes go as
 * epoch seconds *numbers* (strings with fractions or zones are misread there).
 */
export function toEventRow(record: EventRecord, insertedAtMs: number): EventRow {
  return {
    account_id: record.accountId,
    event_id: record.eventId,
    // A lone UTF-16 surrogate is valid JSON but not Unicode, and ClickHouse refuses the whole
    // insert over it (Code 25): such characters become U+FFFD here so one event can never block
    // the writer. (The gateway refuses them in these fields; this covers older messages.)
    event_name: record.eventName.toWellFormed(),
    email: (record.email ?? '').toWellFormed(),
    domain: record.domain ?? '',
    event_time: Math.floor(record.timestampMs / 1000),
    event_time_ms: record.timestampMs,
    received_at: Math.floor(record.receivedAtMs / 1000),
    received_at_ms: record.receivedAtMs,
    properties: JSON.stringify(record.properties),
    source: record.source,
    job_id: record.jobId ?? '',
    inserted_at: Math.floor(insertedAtMs / 1000),
  };
}

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
 * The same row as toEventRow, as one TabSeparated line (the storage hot path): DateTimes as UTC
 * `YYYY-MM-DD hh:mm:ss` text, which both 18.16 and current servers read into DateTime('UTC').
 * TabSeparated needs only backslash, tab and newline escaped, so the properties' JSON text goes
 * in as it is; JSONEachRow escaped every quote of it again and cost a quarter of the writer's CPU.
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

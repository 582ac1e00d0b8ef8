/**
 * The `events` table's row, the one owner of its shapes: the 18.16-compatible one
 * (deploy/clickhouse/migrations/0001_events.sql, with 0007's person columns) and the current-server one (CURRENT_EVENTS_DDL,
 * made by the upgrade, events-upgrade.ts): their columns, the TabSeparated line the processor's
 * writer inserts for each, which shape a table has, and a row read back in API terms for the
 * gateway's readers (the same column names on both shapes).
 */
import type { EventRecord, EventSource } from '@ingest/schemas';
import { AppError } from '@ingest/platform';

/** The legacy `events` columns of 0001, in the order of toEventLineBeforePersonIds's fields. */
export const EVENT_COLUMNS_BEFORE_PERSON_IDS = [
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

/** The Segment-style columns 0007 adds to the legacy table (the current shape has them from the start). */
export const PERSON_ID_COLUMNS = ['user_id', 'anonymous_id', 'context'] as const;

/** The legacy `events` columns (0001 and 0007) in the order of toEventLine's fields. */
export const EVENT_COLUMNS = [...EVENT_COLUMNS_BEFORE_PERSON_IDS.slice(0, -1), ...PERSON_ID_COLUMNS, 'inserted_at'] as const;

/**
 * An event as one TabSeparated line of the `events` table (the storage hot path): DateTimes as UTC
 * `YYYY-MM-DD hh:mm:ss` text, which both 18.16 and current servers read into DateTime('UTC').
 * TabSeparated needs only backslash, tab and newline escaped, so the properties' JSON text goes
 * in as it is; JSONEachRow escaped every quote of it again and cost a quarter of the writer's CPU.
 * Every column is sent (18.16 gives omitted columns zero values, not DEFAULTs).
 * Lone UTF-16 surrogates need no care here: the UTF-8 encoder turns them into U+FFFD.
 * `user_id`, `anonymous_id` and `context` are encoded as in toCurrentEventLine.
 */
export function toEventLine(record: EventRecord, insertedAtMs: number): string {
  return [legacyFields(record), personIdFields(record), insertedAt(insertedAtMs)].join('\t');
}

/**
 * The line of a legacy table that 0007 has not reached yet (a processor started before setup ran
 * the migration): without the person columns, which such a table cannot take.
 */
export function toEventLineBeforePersonIds(record: EventRecord, insertedAtMs: number): string {
  return [legacyFields(record), insertedAt(insertedAtMs)].join('\t');
}

function legacyFields(record: EventRecord): string {
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
  ].join('\t');
}

/** user_id, anonymous_id and context (JSON text), '' when absent: the same on both shapes. */
function personIdFields(record: EventRecord): string {
  return [tsv(record.userId ?? ''), tsv(record.anonymousId ?? ''), tsv(record.context === undefined ? '' : JSON.stringify(record.context))].join('\t');
}

/**
 * The current-server `events` columns the writer sends, in the order of toCurrentEventLine's
 * fields. `event_time_ms` and `received_at_ms` are ALIAS columns there (computed from the
 * DateTime64 times) and `properties_json` (25.8+) is MATERIALIZED: none of them is sent.
 */
export const CURRENT_EVENT_COLUMNS = [
  'account_id',
  'event_id',
  'event_name',
  'email',
  'domain',
  'event_time',
  'received_at',
  'properties',
  'source',
  'job_id',
  'user_id',
  'anonymous_id',
  'context',
  'inserted_at',
] as const;

/**
 * An event as one TabSeparated line of the current-server `events` table: the times as UTC
 * `YYYY-MM-DD hh:mm:ss.mmm` text, which DateTime64(3, 'UTC') reads exactly (no `*_ms` columns
 * to send). `user_id`, `anonymous_id` and `context` (JSON text) come from the records of the
 * Segment-compatible intake, empty for other events (the legacy line carries them the same way).
 */
export function toCurrentEventLine(record: EventRecord, insertedAtMs: number): string {
  return [
    tsv(record.accountId),
    tsv(record.eventId),
    tsv(record.eventName),
    tsv(record.email ?? ''),
    tsv(record.domain ?? ''),
    millisText(record.timestampMs),
    millisText(record.receivedAtMs),
    tsv(JSON.stringify(record.properties)),
    record.source,
    tsv(record.jobId ?? ''),
    personIdFields(record),
    currentInsertedAt(insertedAtMs),
  ].join('\t');
}

/** The two shapes of `events`: `legacy` (18.16 and every server before the upgrade) and `current`. */
export type EventsShape = 'legacy' | 'current';

/** What the writer needs of a shape: the columns it names and the line it sends per event. */
export interface EventsRowFormat {
  readonly shape: EventsShape;
  readonly columns: readonly string[];
  line(record: EventRecord, insertedAtMs: number): string;
}

export const EVENTS_ROW_FORMATS: Readonly<Record<EventsShape, EventsRowFormat>> = {
  legacy: { shape: 'legacy', columns: EVENT_COLUMNS, line: toEventLine },
  current: { shape: 'current', columns: CURRENT_EVENT_COLUMNS, line: toCurrentEventLine },
};

/**
 * A legacy table before migration 0007 (only when a processor of this release runs before setup
 * applied it, against the deploy order of docs/releases.md): the 13 columns of 0001, so the writer
 * never names a column the table does not have. Those events are stored without the person columns.
 */
export const LEGACY_BEFORE_PERSON_IDS_FORMAT: EventsRowFormat = {
  shape: 'legacy',
  columns: EVENT_COLUMNS_BEFORE_PERSON_IDS,
  line: toEventLineBeforePersonIds,
};

/** Pure: the format to write a table of these columns (system.columns) with. */
export function eventsRowFormatOf(columns: readonly { name: string; type: string }[]): EventsRowFormat {
  if (eventsShapeOf(columns) === 'current') return EVENTS_ROW_FORMATS.current;
  return columns.some((c) => c.name === 'user_id') ? EVENTS_ROW_FORMATS.legacy : LEGACY_BEFORE_PERSON_IDS_FORMAT;
}

/**
 * Pure: the shape of an `events` table from its columns (system.columns). DateTime64 times are
 * what only the current shape has; a table without them is the legacy one, whatever the server.
 */
export function eventsShapeOf(columns: readonly { name: string; type: string }[]): EventsShape {
  const eventTime = columns.find((c) => c.name === 'event_time');
  return eventTime !== undefined && eventTime.type.startsWith('DateTime64') ? 'current' : 'legacy';
}

/**
 * The format a batch of lines was made with, told by its field count (16 legacy, 14 current, 13
 * legacy before 0007; escaped text holds no raw tab), so the writer always names the columns the
 * lines have, even when the table's shape changed while they waited.
 */
export function eventsRowFormatOfLine(line: string): EventsRowFormat {
  let tabs = 0;
  for (let i = line.indexOf('\t'); i !== -1; i = line.indexOf('\t', i + 1)) tabs++;
  if (tabs === CURRENT_EVENT_COLUMNS.length - 1) return EVENTS_ROW_FORMATS.current;
  return tabs === EVENT_COLUMNS_BEFORE_PERSON_IDS.length - 1 ? LEGACY_BEFORE_PERSON_IDS_FORMAT : EVENTS_ROW_FORMATS.legacy;
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

/** UTC `YYYY-MM-DD hh:mm:ss.mmm` (DateTime64(3) text). */
function millisText(epochMs: number): string {
  return new Date(Math.trunc(epochMs)).toISOString().slice(0, 23).replace('T', ' ');
}

/** Like secondFormatter, for the one inserted_at of a batch. */
function cachedMillis(): (epochMs: number) => string {
  let cachedMs = Number.NaN;
  let cachedText = '';
  return (epochMs) => {
    if (epochMs !== cachedMs) {
      cachedMs = epochMs;
      cachedText = millisText(epochMs);
    }
    return cachedText;
  };
}

const currentInsertedAt = cachedMillis();
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
  /** Segment `userId` / `anonymousId`, and its `context`; absent when the event had none (or the row was read without them). */
  userId?: string;
  anonymousId?: string;
  context?: Record<string, unknown>;
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
  /** Selected by the event read-back (both shapes have them once 0007 ran); '' when absent. */
  user_id?: string;
  anonymous_id?: string;
  context?: string;
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
    properties: parseObject(row.properties, row.event_id, 'properties'),
    source: row.source,
    jobId: row.job_id === '' ? null : row.job_id,
    ...(row.user_id ? { userId: row.user_id } : {}),
    ...(row.anonymous_id ? { anonymousId: row.anonymous_id } : {}),
    ...(row.context ? { context: parseObject(row.context, row.event_id, 'context') } : {}),
  };
}

function parseObject(text: string, eventId: string, what: 'properties' | 'context'): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new AppError('stored_event_corrupt', `stored ${what} of event ${eventId} are not JSON`, { cause: err });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new AppError('stored_event_corrupt', `stored ${what} of event ${eventId} are not a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

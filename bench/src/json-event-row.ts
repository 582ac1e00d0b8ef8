/**
 * An event as a JSONEachRow object of the `events` table, for the benchmark's baseline only (a
 * plain client's insert to compare the writer with). The services write TabSeparated lines
 * (toEventLine in @ingest/domain).
 */
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

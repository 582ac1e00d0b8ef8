import type { EventSource, StoredEvent } from '@ingest/schemas';
import { type ClickHouse, ident, raw, sql } from '@ingest/platform';
import { type EventRowOut, type EventSyncState, fromEventRow, type StoredEventRecord } from '@ingest/domain';

export type { StoredEventRecord };

/** Read access to stored events; routes see this, never SQL. */
export interface EventStore {
  /** The event of this account with this id, or undefined (also when it belongs to another account). */
  findEvent(accountId: string, eventId: string): Promise<StoredEventRecord | undefined>;
  /** The account's most recently received events, newest first, each once (the dashboard's event debugger). */
  recentEvents(accountId: string, options: RecentEventsOptions): Promise<RecentEvent[]>;
}

export interface RecentEventsOptions {
  limit: number;
  /** Received at or after this time. */
  sinceMs: number;
  /** Event names containing this text (case-insensitive). */
  name?: string;
  /** Emails or domains containing this text (case-insensitive). */
  identity?: string;
}

export interface RecentEvent extends StoredEventRecord {
  /** Rows of this event in the table before merging: more than 1 when a redelivered copy is not merged away yet (reads count it once). */
  copies: number;
}

/**
 * Reads through FINAL: the ReplacingMergeTree keeps redelivered copies of an event until a
 * background merge, and FINAL merges them at read time. Copies with the same sorting key
 * collapse to the latest insert; the ORDER BY/LIMIT picks one row also in the rare case of the
 * same eventId stored under a different key (re-sent with another name or time after the
 * dedupe window): the most recently received one, like a replacement.
 *
 * The account is the first column of the sorting key, so the scan stays within one account.
 * `user_id`, `anonymous_id` and `context` are on both shapes of `events` (the legacy one since
 * migration 0007, which setup applies before the services start).
 *
 * No `SETTINGS` clause: the gateway reads as the read-only user (readonly = 1), which may change
 * no setting, and 18.16 refuses any SETTINGS clause then ("Cannot execute SET query in readonly
 * mode"). The user's own settings bound each read (max_execution_time, READER_SETTINGS in
 * @ingest/platform; docs/clickhouse.md, "The read-only user").
 */
export function createClickHouseEventStore(ch: ClickHouse, options: { table?: string } = {}): EventStore {
  const table = ident(options.table ?? 'events');
  return {
    async findEvent(accountId, eventId) {
      const rows = await ch.query<EventRowOut>(
        sql`SELECT event_id, event_name, email, domain, event_time_ms, received_at_ms, properties, source, job_id, user_id, anonymous_id, context
          FROM ${table} FINAL
          WHERE account_id = ${accountId} AND event_id = ${eventId}
          ORDER BY received_at_ms DESC, inserted_at DESC
          LIMIT 1`,
      );
      const row = rows[0];
      return row ? fromEventRow(row) : undefined;
    },
    async recentEvents(accountId, options) {
      // Deduplicated the argMax way (18.16-safe, see docs/clickhouse.md): one row per eventId,
      // its latest copy, and how many copies the table still holds. Aliases differ from column names.
      const filters = [
        options.name ? sql`AND positionCaseInsensitive(event_name, ${options.name}) > 0` : '',
        options.identity ? sql`AND (positionCaseInsensitive(email, ${options.identity}) > 0 OR positionCaseInsensitive(domain, ${options.identity}) > 0)` : '',
      ];
      const rows = await ch.query<Record<string, unknown>>(
        sql`SELECT event_id,
            argMax(event_name, inserted_at) AS latest_name, argMax(email, inserted_at) AS latest_email, argMax(domain, inserted_at) AS latest_domain,
            argMax(event_time_ms, inserted_at) AS latest_time_ms, max(received_at_ms) AS latest_received_ms,
            argMax(properties, inserted_at) AS latest_properties, argMax(source, inserted_at) AS latest_source, argMax(job_id, inserted_at) AS latest_job_id,
            count() AS copies
          FROM ${table}
          WHERE account_id = ${accountId} AND received_at >= ${new Date(options.sinceMs)} ${raw(filters.join(' '))}
          GROUP BY event_id
          ORDER BY latest_received_ms DESC, event_id
          LIMIT ${options.limit}`,
      );
      return rows.map((r) => ({ ...fromEventRow(renamed(r)), copies: Number(r.copies) }));
    },
  };
}

/** The aliased columns of recentEvents back to the names fromEventRow knows. */
function renamed(r: Record<string, unknown>): EventRowOut {
  return {
    event_id: String(r.event_id),
    event_name: String(r.latest_name),
    email: String(r.latest_email),
    domain: String(r.latest_domain),
    event_time_ms: r.latest_time_ms as string,
    received_at_ms: r.latest_received_ms as string,
    properties: String(r.latest_properties),
    source: r.latest_source as EventSource,
    job_id: String(r.latest_job_id),
  };
}

/** A stored event as the read-back routes answer it (GET /v1/events/{id}, the dashboard's event debugger). */
export function toStoredEvent(e: StoredEventRecord, sync: EventSyncState = { state: 'pending' }): StoredEvent {
  return {
    eventId: e.eventId,
    eventName: e.eventName,
    email: e.email,
    domain: e.domain,
    timestamp: new Date(e.timestampMs).toISOString(),
    receivedAt: new Date(e.receivedAtMs).toISOString(),
    properties: e.properties,
    source: e.source,
    jobId: e.jobId,
    ...(e.userId !== undefined ? { userId: e.userId } : {}),
    ...(e.anonymousId !== undefined ? { anonymousId: e.anonymousId } : {}),
    ...(e.context !== undefined ? { context: e.context } : {}),
    sync,
  };
}

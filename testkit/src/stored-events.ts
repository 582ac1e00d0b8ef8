/** Events in ClickHouse as the processor stores them, for tests of what reads them back. */
import { EVENT_COLUMNS, toEventLine } from '@ingest/domain';
import type { ClickHouse } from '@ingest/platform';
import { EVENT_RECORD_VERSION, type EventRecord } from '@ingest/schemas';

/** A stored event of `accountId` received a minute ago; `fields` override any field. */
export function storedEvent(accountId: string, fields: Partial<EventRecord> = {}): EventRecord {
  const receivedAtMs = Date.now() - 60_000;
  return {
    v: EVENT_RECORD_VERSION,
    accountId,
    eventId: 'evt-stored-1',
    eventName: 'Signed Up',
    email: 'ada@example.com',
    domain: null,
    timestampMs: receivedAtMs,
    receivedAtMs,
    properties: { plan: 'pro' },
    source: 'api',
    jobId: null,
    ...fields,
  };
}

/** Inserts the records into `events` through the storage writer's own line (the tests' ClickHouse user may write; the services' reader may not). */
export async function storeEvents(ch: ClickHouse, records: readonly EventRecord[], insertedAtMs = Date.now()): Promise<void> {
  await ch.insertTabSeparated(
    'events',
    EVENT_COLUMNS,
    records.map((r) => toEventLine(r, insertedAtMs)),
  );
}

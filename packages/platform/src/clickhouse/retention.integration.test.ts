/**
 * Real server: the stack's ClickHouse (18.16 here: no TTL, so retention drops the expired
 * monthly partitions; on a current server, the TTLs). Events, rollups (filled by their
 * materialized views) and an audit record, some past the retention, in a database of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClickHouse, storedEvent, storeEvents, type TestClickHouse, testLogger } from '@ingest/testkit';
import { applyRetention, serverHasTtl } from './retention.js';

const NOW = Date.UTC(2026, 10, 15, 12); // 2026-11-15
const day = 86_400_000;
let db: TestClickHouse;
let version: string;

beforeAll(async () => {
  db = await createTestClickHouse();
  [{ v: version = '0' } = { v: '0' }] = await db.ch.query<{ v: string }>('SELECT version() AS v');
  const at = (ms: number, eventId: string) => storedEvent('acc_retention', { eventId, timestampMs: ms, receivedAtMs: ms });
  // August and September 2026 are past 30 days on 2026-11-15; October is not wholly.
  await storeEvents(db.ch, [
    at(Date.UTC(2026, 7, 10), 'evt-aug'),
    at(Date.UTC(2026, 8, 30), 'evt-sep'),
    at(Date.UTC(2026, 9, 20), 'evt-oct'),
    at(NOW - day, 'evt-nov'),
  ]);
  // A record of 2025: the audit log keeps it whatever the retention.
  await db.ch.insert('audit_log', [
    {
      id: 'aud-old',
      at: '2025-01-02 03:04:05',
      at_ms: Date.UTC(2025, 0, 2, 3, 4, 5),
      account_id: 'acc_retention',
      actor_type: 'admin',
      actor: 'a',
      actor_role: 'admin',
      action: 'x',
      target: '',
      ip: '',
      request_id: '',
      before_json: '',
      after_json: '',
    },
  ]);
});

afterAll(async () => {
  await db?.cleanup();
});

const ids = async (table: string, column: string) =>
  (await db.ch.query<{ v: string }>(`SELECT toString(${column}) AS v FROM ${table} ORDER BY v`)).map((r) => r.v);

describe('retention on this server', () => {
  it('keeps 30 days of events and 100 of rollups: whole expired months dropped (18.16) or TTLs set (current); the audit log untouched', async () => {
    const result = await applyRetention(db.ch, {
      settings: { eventsDays: 30, rollupsDays: 100 },
      serverVersion: version,
      logger: testLogger(),
      now: () => NOW,
    });
    if (serverHasTtl(version)) {
      expect(result.ttlChanged).toEqual(['events', 'usage_hourly', 'events_daily']);
      const [row] = await db.ch.query<{ e: string }>("SELECT engine_full AS e FROM system.tables WHERE database = currentDatabase() AND name = 'events'");
      expect(row?.e).toMatch(/TTL toDateTime\(event_time\) \+ toIntervalDay\(30\)/);
    } else {
      expect(result.ttlChanged).toEqual([]);
      // usage_hourly and events_daily: 100 days before 2026-11-15 is 2026-08-07, so no whole month of theirs is past it.
      expect(result.partitionsDropped.sort()).toEqual(['events:202608', 'events:202609']);
      expect(await ids('events', 'event_id')).toEqual(['evt-nov', 'evt-oct']);
      expect(await ids('events_daily', 'day')).toEqual(['2026-08-10', '2026-09-30', '2026-10-20', '2026-11-14']);
    }
    expect(await ids('audit_log', 'id')).toEqual(['aud-old']);
    // Run again (setup runs daily): nothing more to do.
    const again = await applyRetention(db.ch, { settings: { eventsDays: 30, rollupsDays: 100 }, serverVersion: version, logger: testLogger(), now: () => NOW });
    expect(again).toEqual({ ttlChanged: [], partitionsDropped: [] });
  });

  it('0 keeps everything (and removes a TTL it set)', async () => {
    const result = await applyRetention(db.ch, {
      settings: { eventsDays: 0, rollupsDays: 0 },
      serverVersion: version,
      logger: testLogger(),
      now: () => NOW + 1000 * day,
    });
    expect(result.partitionsDropped).toEqual([]);
    expect(result.ttlChanged).toEqual(serverHasTtl(version) ? ['events', 'usage_hourly', 'events_daily'] : []);
    expect(await ids('events', 'event_id')).toEqual(['evt-nov', 'evt-oct']);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPending, CLICKHOUSE_MIGRATIONS_DIR, type ClickHouse, createLogger, loadMigrations } from '@ingest/platform';
import { EVENT_COLUMNS, EVENTS_ROW_FORMATS, eventsRowFormatOfLine, fromEventRow, readEventsShape, toEventLine, upgradeEvents } from '@ingest/domain';
import { EVENT_RECORD_VERSION, type EventRecord } from '@ingest/schemas';
import { CHDB_ENGINES, type ChdbEngine, chdbClickHouse, startChdb } from '@ingest/testkit/chdb';
import { Registry } from 'prom-client';
import { createClickHouseWriter } from './clickhouse.writer.js';
import { createEventsRowFormatHolder } from './events-row-format.js';

/**
 * The upgrade of a deployment whose `events` has the legacy shape to the current one, on both
 * current engines, while a writer keeps inserting (docs/clickhouse.md, "Upgrading `events`"):
 * the storage writer and its row-format holder, as the processor wires them, insert a batch
 * before every step of the upgrade and between its statements; a batch refused after the switch
 * is formatted again and re-sent, as the storage consumer's restart re-reads it from Kafka. Then
 * every event is there once (FINAL, uniqExact, the rollups), with its milliseconds. chdb runs one
 * statement at a time, so "concurrent" here means interleaved statement by statement; the
 * protocol's wait for inserts already running is exercised on a real server only.
 */
const logger = createLogger({ service: 'chdb-test', level: 'silent' });
const ACCOUNT = 'acc_upgrade';

function record(i: number): EventRecord {
  const month = i % 3; // three partitions: September, October, November 2026
  return {
    v: EVENT_RECORD_VERSION,
    accountId: i % 4 === 0 ? `${ACCOUNT}_b` : ACCOUNT,
    eventId: `evt-${i}`,
    eventName: i % 2 === 0 ? 'Signed Up' : 'Page\tViewed',
    email: `p${i % 17}@example.com`,
    domain: 'example.com',
    timestampMs: Date.UTC(2026, 8 + month, 3, 10, 0, 0, i % 1000),
    receivedAtMs: Date.UTC(2026, 10, 27, 9, 0, 0, i % 1000) + i * 1000,
    properties: { n: i, text: 'a\\b\n😀' },
    source: 'api',
    jobId: null,
    // Segment messages: their person columns are copied and bridged too (the legacy table has them since 0007).
    ...(i % 5 === 0 ? { userId: `u${i}`, anonymousId: `a\t${i}`, context: { library: { name: 'analytics-node' }, n: i } } : {}),
  };
}

describe.each(CHDB_ENGINES)('upgrading events on $name while events arrive', ({ name }) => {
  let engine: ChdbEngine;
  let ch: ClickHouse;
  beforeAll(async () => {
    engine = await startChdb(name);
    ch = await chdbClickHouse(engine, 'upgrade');
    await applyPending(ch, await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR), logger);
  });
  afterAll(() => engine?.close());

  it('loses and duplicates nothing, keeps the rollups firing, and runs once', async () => {
    // The processor's wiring: lines in the holder's shape, columns told by the lines, a refused insert looks again.
    const format = createEventsRowFormatHolder(ch, logger);
    expect(await format.refresh()).toBe('legacy');
    const writer = createClickHouseWriter({
      ch,
      table: 'events',
      columns: (lines) => eventsRowFormatOfLine(lines[0] ?? '').columns,
      onRejected: () => format.refresh(),
      logger,
      metrics: new Registry(),
    });
    const ctx = { heartbeat: () => Promise.resolve(), shouldContinue: () => false };
    let next = 0;
    let refused = 0;
    const shapes = new Set<string>();
    /** One batch of the storage consumer: refused after the switch, it is read again and formatted anew. */
    async function writeBatch(size: number, redeliver = false): Promise<void> {
      const records = Array.from({ length: size }, () => record(next++));
      if (redeliver) records.push(record(0), record(next - 1)); // redelivered copies
      for (;;) {
        const insertedAt = Date.UTC(2026, 10, 27, 12) + next;
        shapes.add(format.shape);
        try {
          await writer.write(
            records.map((r) => format.line(r, insertedAt)),
            ctx,
          );
          return;
        } catch {
          refused++;
        }
      }
    }

    // An existing deployment: legacy rows in three partitions.
    await writeBatch(300, true);
    // A writer that keeps inserting while the upgrade runs, statement by statement.
    let writing = true;
    const background = (async () => {
      for (let i = 0; writing && i < 5; i++) await writeBatch(7);
    })();
    const steps: string[] = [];
    const result = await upgradeEvents(ch, {
      logger,
      afterStep: async (step) => {
        steps.push(step);
        await writeBatch(11, true);
      },
    });
    writing = false;
    await background;
    await writeBatch(13, true); // after the switch: the current shape

    expect(result).toMatchObject({ status: 'upgraded', partitions: 3 });
    expect(steps).toEqual(['created', 'bridged', 'inserts-settled', 'copied:202609', 'copied:202610', 'copied:202611', 'switched']);
    expect(await readEventsShape(ch)).toBe('current');
    expect([...shapes].sort()).toEqual(['current', 'legacy']);
    expect(refused).toBeGreaterThanOrEqual(1); // the legacy lines in flight at the switch were refused, then re-sent

    const total = next;
    const [counts] = await ch.query<{ rows: string; ids: string; final: string }>(
      `SELECT uniqExact(event_id) AS ids, (SELECT count() FROM events FINAL WHERE account_id LIKE 'acc_upgrade%') AS final, count() AS rows FROM events WHERE account_id LIKE 'acc_upgrade%'`,
    );
    expect({ ids: Number(counts?.ids), final: Number(counts?.final) }).toEqual({ ids: total, final: total });
    // Row-level overlap (copied and bridged, or redelivered) merges away like any redelivery.
    await ch.command('OPTIMIZE TABLE events FINAL');
    const [merged] = await ch.query<{ rows: string }>("SELECT count() AS rows FROM events WHERE account_id LIKE 'acc_upgrade%'");
    expect(Number(merged?.rows)).toBe(total);

    // Every event once, with its milliseconds, through the readers' row.
    const rows = await ch.query<Parameters<typeof fromEventRow>[0]>(
      "SELECT event_id, event_name, email, domain, event_time_ms, received_at_ms, properties, source, job_id, user_id, anonymous_id, context FROM events_dedup WHERE account_id LIKE 'acc_upgrade%'",
    );
    const byId = new Map(rows.map((r) => [r.event_id, fromEventRow(r)]));
    for (let i = 0; i < total; i++) {
      const r = record(i);
      expect(byId.get(r.eventId), r.eventId).toMatchObject({
        timestampMs: r.timestampMs,
        receivedAtMs: r.receivedAtMs,
        eventName: r.eventName,
        properties: r.properties,
        ...(r.userId === undefined ? {} : { userId: r.userId, anonymousId: r.anonymousId, context: r.context }),
      });
      if (r.userId === undefined) expect(byId.get(r.eventId), r.eventId).not.toHaveProperty('userId');
    }

    // The rollups' materialized views fired for every event, before and after the switch, exactly once per event.
    const [usage] = await ch.query<{ events: string }>("SELECT uniqExactMerge(events) AS events FROM usage_hourly WHERE account_id LIKE 'acc_upgrade%'");
    const [daily] = await ch.query<{ events: string }>("SELECT uniqExactMerge(events) AS events FROM events_daily WHERE account_id LIKE 'acc_upgrade%'");
    expect([Number(usage?.events), Number(daily?.events)]).toEqual([total, total]);

    // The switch is recorded; the legacy table is kept for a check; a second run does nothing.
    const [recorded] = await ch.query<{ partitions: number }>('SELECT partitions FROM events_upgrades');
    expect(Number(recorded?.partitions)).toBe(3);
    const tables = await ch.query<{ name: string }>("SELECT name FROM system.tables WHERE database = 'upgrade' AND name LIKE 'events%' ORDER BY name");
    expect(tables.map((t) => t.name)).toEqual(['events', 'events_before_upgrade', 'events_daily', 'events_daily_mv', 'events_dedup', 'events_upgrades']);
    expect(await upgradeEvents(ch, { logger })).toMatchObject({ status: 'already-current' });
  });

  it('refuses legacy lines on the current table without storing any of them', async () => {
    const before = await ch.query<{ n: string }>('SELECT count() AS n FROM events');
    await expect(ch.insertTabSeparated('events', EVENT_COLUMNS, [toEventLine(record(99_999), 0)])).rejects.toThrow();
    expect(await ch.query<{ n: string }>('SELECT count() AS n FROM events')).toEqual(before);
    expect(EVENTS_ROW_FORMATS.current.columns).not.toContain('event_time_ms');
  });
});

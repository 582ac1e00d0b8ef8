/**
 * Real server: the stack's ClickHouse 18.16. The upgrade of `events` to the current shape is for
 * 24.8 and later: here it reports that, changes nothing (the table, its columns, the writer's
 * format), and the events written meanwhile are all stored. The upgrade itself is tested on the
 * current engines (services/processor/src/storage/events-upgrade.chdb.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLICKHOUSE_MIGRATIONS_DIR, type ClickHouse, createClickHouse, dropDatabase, migrate } from '@ingest/platform';
import { EVENT_RECORD_VERSION } from '@ingest/schemas';
import { integrationEnv, testLogger, uniqueSuffix } from '@ingest/testkit';
import { EVENT_COLUMNS, toEventLine } from './events-table.js';
import { readEventsShape, upgradeEvents } from './events-upgrade.js';

const env = integrationEnv();
const database = `test_upgrade_${uniqueSuffix()}`;
let ch: ClickHouse;

beforeAll(async () => {
  await migrate({ url: env.clickhouseUrl, database, dir: CLICKHOUSE_MIGRATIONS_DIR, logger: testLogger() });
  ch = createClickHouse({ url: env.clickhouseUrl, database });
});
afterAll(async () => {
  await ch?.close();
  await dropDatabase({ url: env.clickhouseUrl, database });
});

const line = (i: number) =>
  toEventLine(
    {
      v: EVENT_RECORD_VERSION,
      accountId: 'acc_upgrade_1816',
      eventId: `evt-${i}`,
      eventName: 'Signed Up',
      email: null,
      domain: null,
      timestampMs: Date.UTC(2026, 10, 27, 12, 0, 0, i),
      receivedAtMs: Date.UTC(2026, 10, 27, 12, 0, 1, i),
      properties: { i },
      source: 'api',
      jobId: null,
    },
    Date.UTC(2026, 10, 27, 12, 0, 2),
  );

describe('upgrade-events on 18.16', () => {
  it('says the current shape needs 24.8, keeps the legacy table as it is, and loses no event written meanwhile', async () => {
    const columnsOf = () =>
      ch.query<{ name: string; type: string }>("SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'events' ORDER BY name");
    const before = await columnsOf();
    await ch.insertTabSeparated('events', EVENT_COLUMNS, [0, 1, 2].map(line));
    const [result] = await Promise.all([upgradeEvents(ch, { logger: testLogger() }), ch.insertTabSeparated('events', EVENT_COLUMNS, [3, 4, 5, 6].map(line))]);
    expect(result).toEqual({ status: 'not-for-this-server', serverVersion: expect.stringMatching(/^18\.16\./) as unknown, needs: '24.8' });
    expect(await columnsOf()).toEqual(before);
    expect(await readEventsShape(ch)).toBe('legacy');
    await ch.insertTabSeparated('events', EVENT_COLUMNS, [7].map(line));
    const [counts] = await ch.query<{ n: string; ids: string }>('SELECT count() AS n, uniqExact(event_id) AS ids FROM events FINAL');
    expect({ n: Number(counts?.n), ids: Number(counts?.ids) }).toEqual({ n: 8, ids: 8 });
    const tables = await ch.query<{ name: string }>("SELECT name FROM system.tables WHERE database = currentDatabase() AND name LIKE 'events%' ORDER BY name");
    expect(tables.map((t) => t.name)).toEqual(['events', 'events_daily', 'events_daily_mv', 'events_dedup']);
  });
});

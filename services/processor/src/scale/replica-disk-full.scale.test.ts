/**
 * Real servers: Kafka (the stack's broker), Redis, replicated ClickHouse (ZooKeeper and two 18.16
 * replicas, scripts/stack-clickhouse-cluster.sh). The gateway app in process, the processor as a
 * real OS process. A real full disk: the test database's directory on replica 1 is a 64 MB
 * tmpfs (testkit mountSmallDisk), filled with a file while events arrive.
 *
 * The processor writes to replica 1 alone (CLICKHOUSE_URL names it only): the case of a single
 * server, or of a writer pinned to its replica, where nothing can route around the full disk (a
 * writer given both replicas moves to the other one: client-failover.test.ts). What a full
 * 18.16 replica answers is `Code: 75 … errno: 28, strerror: No space left on device`. The
 * gateway keeps answering 202 (Kafka holds the events); the writer retries the same batch; the
 * processor's /readyz and ingest_clickhouse_insert_failing (the alert's input) name the cause,
 * `disk_full`. Space freed: the processor recovers by itself, and every event answered 202 is
 * stored once on both replicas (count() = uniqExact(event_id), without FINAL).
 */
import { METRIC_NAMES, type TopicKey, TOPICS } from '@ingest/platform';
import {
  createTestClickHouse,
  createTestKafka,
  integrationEnv,
  mountSmallDisk,
  ProcessorFleet,
  processorSetup,
  replicaUrl,
  type SmallDisk,
  uniqueSuffix,
  useFixture,
  waitFor,
} from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture } from '@ingest/testkit/gateway';
import { type ApiClient, newStats, postEvents, runPool, testEvent } from '@ingest/testkit/processor';
import { afterAll, describe, expect, it } from 'vitest';
import { countsOn, useReplicatedClickHouse } from './replicated-clickhouse.fixture.js';

const TOTAL = 3_000;
const PER_REQUEST = 50;

const { startedAt } = useReplicatedClickHouse('replica-disk-full');
let disk: SmallDisk | undefined;
const gw: GatewayFixture = useFixture(
  async () => {
    // The database's directory must be the small disk before the database is made.
    const database = `test_${uniqueSuffix()}`;
    disk = await mountSmallDisk(1, database, 64);
    const [kafka, clickhouse] = await Promise.all([createTestKafka(Object.keys(TOPICS) as TopicKey[]), createTestClickHouse(integrationEnv(), database)]);
    return createGatewayFixture({}, { stores: { kafka, clickhouse } });
  },
  async (fixture) => {
    await disk?.free();
    await fixture.close();
    await disk?.unmount();
  },
);
let fleet: ProcessorFleet | undefined;
afterAll(async () => {
  await fleet?.killAll();
  await disk?.free();
});

/** The 1-valued causes of ingest_clickhouse_insert_failing in a /metrics text. */
function failingCauses(text: string): string[] {
  const prefix = `${METRIC_NAMES.clickhouseInsertFailing}{`;
  return text
    .split('\n')
    .filter((line) => line.startsWith(prefix) && line.trim().endsWith(' 1'))
    .map((line) => /cause="([^"]+)"/.exec(line)?.[1] ?? '?');
}

describe('a ClickHouse replica whose disk is full, under load', () => {
  it('shows in /readyz and the failing metric as disk_full, loses nothing answered 202, and recovers once space is freed', async () => {
    const setup = processorSetup(gw.kafka.prefix, gw.clickhouse.database, 'replica-disk-full', {
      CLICKHOUSE_URL: replicaUrl(1),
      STORAGE_BATCH_MAX_WAIT_MS: '200',
      STORAGE_MIN_INSERT_INTERVAL_MS: '100',
    });
    fleet = new ProcessorFleet(setup);
    const processor = await fleet.start();
    const { account, apiKey } = await gw.newAccount('pro');
    const client: ApiClient = { app: gw.app, apiKey };
    const db = gw.clickhouse.database;
    const requests = Array.from({ length: TOTAL / PER_REQUEST }, (_, r) =>
      Array.from({ length: PER_REQUEST }, (_, i) => testEvent(`df-${r * PER_REQUEST + i}`, r * PER_REQUEST + i)),
    );
    const stats = newStats();
    // About 20 s of load (150 events/s): the full disk falls inside it.
    const load = runPool(requests, { concurrency: 2, perSecond: 3 }, (events) => postEvents(client, events, stats));

    await waitFor(
      async () => {
        const c = await countsOn(1, db, account.id);
        return c.distinct >= 300 ? c : undefined;
      },
      { description: 'events stored before the disk filled', timeoutMs: 60_000, intervalMs: 100 },
    );
    const filled = await (disk as SmallDisk).fill();
    const filledAt = Date.now();
    const storedWhenFull = await countsOn(1, db, account.id);

    const notReady = await waitFor(
      async () => {
        const h = await processor.health();
        return h.ready === 503 && h.waitingFor?.some((w) => w.includes('cause: disk_full')) ? h : undefined;
      },
      { description: 'the processor not ready, naming the full disk', timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(notReady.live).toBe(200);
    expect(failingCauses(await processor.metrics())).toEqual(['disk_full']);
    // The failures are retried (the same batch), not refused: nothing went to the dead letters.
    expect(await processor.metrics()).toMatch(new RegExp(`^${METRIC_NAMES.clickhouseInsertFailures}\\{[^}]*retryable="false"[^}]*\\} 0$`, 'm'));
    const secondsToNotReady = Math.round((Date.now() - filledAt) / 1000);
    console.log(`replica-disk-full: ${filled} bytes filled the disk; /readyz 503 after ${secondsToNotReady} s: ${notReady.waitingFor?.join('; ')}`);
    const storedWhileFull = await countsOn(1, db, account.id);

    await load;
    expect(stats.events).toBe(TOTAL);
    // Stalled, not dropped: nothing more was stored while the disk was full, though events kept coming.
    expect(await countsOn(1, db, account.id)).toEqual(storedWhileFull);
    expect(storedWhileFull.distinct).toBeLessThan(TOTAL);
    await (disk as SmallDisk).free();
    const freedAt = Date.now();
    for (const replica of [1, 2] as const) {
      const counts = await waitFor(
        async () => {
          const c = await countsOn(replica, db, account.id);
          return c.distinct === TOTAL ? c : undefined;
        },
        { description: `all ${TOTAL} events on replica ${replica} after space was freed`, timeoutMs: 180_000, intervalMs: 500 },
      );
      expect(counts).toEqual({ rows: TOTAL, distinct: TOTAL });
    }
    const ready = await waitFor(
      async () => {
        const h = await processor.health();
        return h.ready === 200 ? h : undefined;
      },
      { description: 'the processor ready again', timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(ready.live).toBe(200);
    expect(failingCauses(await processor.metrics())).toEqual([]);
    expect(fleet.unexpectedExits()).toEqual([]);
    console.log(
      `replica-disk-full: ${storedWhenFull.distinct} events stored when the disk filled, all ${TOTAL} stored once on both replicas ${Math.round((Date.now() - freedAt) / 1000)} s after space was freed; ${Math.round((Date.now() - startedAt) / 1000)} s in all`,
    );
  });
});

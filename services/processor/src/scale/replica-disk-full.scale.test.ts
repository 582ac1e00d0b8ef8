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
 *
 * The second case gives the processor both replicas (the product's cluster configuration): its
 * writer moves to replica 2 and stores every event there at once, /readyz stays 200, and the
 * replica watch names replica 1 under `degraded` with cause disk_full (its replication queue
 * fails every fetch with "No space left on device") and sets
 * ingest_clickhouse_replica_unhealthy{cause="disk_full"}; space freed, replica 1 catches up and
 * both clear.
 */
import { METRIC_NAMES, replicaName, type TopicKey, TOPICS } from '@ingest/platform';
import {
  clusterUrls,
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

/** The replicas ingest_clickhouse_replica_unhealthy names with a 1, as `replica cause`. */
function unhealthyReplicas(text: string): string[] {
  const prefix = `${METRIC_NAMES.clickhouseReplicaUnhealthy}{`;
  return text
    .split('\n')
    .filter((line) => line.startsWith(prefix) && line.trim().endsWith(' 1'))
    .map((line) => `${/replica="([^"]+)"/.exec(line)?.[1] ?? '?'} ${/cause="([^"]+)"/.exec(line)?.[1] ?? '?'}`);
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

  it('with both replicas in CLICKHOUSE_URL: stays ready, names the full replica degraded with disk_full, stores every event once on the other at once, and clears once space is freed', async () => {
    await fleet?.killAll();
    const setup = processorSetup(gw.kafka.prefix, gw.clickhouse.database, 'replica-disk-full-both', {
      CLICKHOUSE_URL: clusterUrls(),
      STORAGE_BATCH_MAX_WAIT_MS: '200',
      STORAGE_MIN_INSERT_INTERVAL_MS: '100',
    });
    fleet = new ProcessorFleet(setup);
    const processor = await fleet.start();
    const full = replicaName(replicaUrl(1));
    const { account, apiKey } = await gw.newAccount('pro');
    const client: ApiClient = { app: gw.app, apiKey };
    const db = gw.clickhouse.database;
    const requests = Array.from({ length: TOTAL / PER_REQUEST }, (_, r) =>
      Array.from({ length: PER_REQUEST }, (_, i) => testEvent(`dfb-${r * PER_REQUEST + i}`, r * PER_REQUEST + i)),
    );
    const stats = newStats();
    // Every /readyz answer while the disk is full: the writer has the other replica, so it stays ready.
    const readyAnswers = new Map<number, number>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        // An ops server that does not answer counts as 0.
        const ready = await processor.health().then(
          (h) => h.ready,
          () => 0,
        );
        readyAnswers.set(ready, (readyAnswers.get(ready) ?? 0) + 1);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    })();
    const load = runPool(requests, { concurrency: 2, perSecond: 3 }, (events) => postEvents(client, events, stats));

    await waitFor(
      async () => {
        const c = await countsOn(1, db, account.id);
        return c.distinct >= 300 ? c : undefined;
      },
      { description: 'events stored on replica 1 before its disk filled', timeoutMs: 60_000, intervalMs: 100 },
    );
    await (disk as SmallDisk).fill();
    const filledAt = Date.now();
    let seen: unknown;
    const degraded = await waitFor(
      async () => {
        const h = await processor.health();
        seen = h;
        const line = h.degraded?.find((d) => d.startsWith(`clickhouse-replica ${full}: replication failing (cause: disk_full;`));
        return h.ready === 200 && line ? { h, line } : undefined;
      },
      {
        description: () => `the processor ready with /readyz degraded naming ${full} and disk_full (last /readyz: ${JSON.stringify(seen)})`,
        timeoutMs: 90_000,
        intervalMs: 500,
      },
    );
    expect(degraded.h.degraded).toHaveLength(1);
    expect(degraded.line).toMatch(/No space left on device/);
    expect(unhealthyReplicas(await processor.metrics())).toEqual([`${full} disk_full`]);
    console.log(`replica-disk-full (both replicas): degraded after ${Math.round((Date.now() - filledAt) / 1000)} s: ${degraded.line}`);

    await load;
    expect(stats.events).toBe(TOTAL);
    // At once on the healthy replica: the writer moved there when replica 1 refused an insert.
    const onHealthy = await waitFor(
      async () => {
        const c = await countsOn(2, db, account.id);
        seen = c;
        return c.distinct === TOTAL ? c : undefined;
      },
      { description: () => `all ${TOTAL} events on replica 2 while replica 1 is full (last: ${JSON.stringify(seen)})`, timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(onHealthy).toEqual({ rows: TOTAL, distinct: TOTAL });
    const onFull = await countsOn(1, db, account.id);
    expect(onFull.distinct).toBeLessThan(TOTAL);
    // Still named while its queue keeps failing; the healthy replica never is.
    const stillFull = await processor.health();
    expect(stillFull.degraded?.map((d) => d.split(' (cause: ')[0])).toEqual([`clickhouse-replica ${full}: replication failing`]);
    sampling = false;
    await sampler;
    expect([...readyAnswers.keys()]).toEqual([200]);

    await (disk as SmallDisk).free();
    const freedAt = Date.now();
    for (const replica of [1, 2] as const) {
      const counts = await waitFor(
        async () => {
          const c = await countsOn(replica, db, account.id);
          seen = c;
          return c.distinct === TOTAL ? c : undefined;
        },
        {
          description: () => `all ${TOTAL} events on replica ${replica} after space was freed (last: ${JSON.stringify(seen)})`,
          timeoutMs: 180_000,
          intervalMs: 500,
        },
      );
      expect(counts).toEqual({ rows: TOTAL, distinct: TOTAL });
    }
    const cleared = await waitFor(
      async () => {
        const h = await processor.health();
        seen = h;
        return h.ready === 200 && h.degraded === undefined ? h : undefined;
      },
      { description: () => `the processor ready and no longer degraded (last /readyz: ${JSON.stringify(seen)})`, timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(cleared.live).toBe(200);
    expect(unhealthyReplicas(await processor.metrics())).toEqual([]);
    expect(fleet.unexpectedExits()).toEqual([]);
    console.log(
      `replica-disk-full (both replicas): ${onFull.distinct} of ${TOTAL} on the full replica, all on the other at once; both hold all once ${Math.round((Date.now() - freedAt) / 1000)} s after space was freed; /readyz answers ${JSON.stringify(Object.fromEntries(readyAnswers))}`,
    );
  });
});

/**
 * Real servers: Kafka (the stack's broker), Redis, replicated ClickHouse (ZooKeeper and two 18.16
 * replicas, scripts/stack-clickhouse-cluster.sh). The gateway app in process, the processor as a
 * real OS process, CLICKHOUSE_URL listing both replicas.
 *
 * ZooKeeper is SIGKILLed while events arrive: the replicated tables turn read-only on every
 * replica, so failing over does not help. The gateway keeps answering 202 (Kafka holds the
 * events); the processor's /readyz and its ingest_clickhouse_insert_failing metric (the alert's
 * input) name the cause, `zookeeper`. ZooKeeper started again: every event answered 202 is
 * stored, once, on both replicas, and /readyz is 200 again.
 */
import { METRIC_NAMES } from '@ingest/platform';
import { killZooKeeper, startZooKeeper, waitFor } from '@ingest/testkit';
import { useGatewayFixture } from '@ingest/testkit/gateway';
import { newStats, postEvents, runPool } from '@ingest/testkit/processor';
import { afterAll, describe, expect, it } from 'vitest';
import { countsOn, useReplicatedClickHouse, useReplicatedProcessor } from './replicated-clickhouse.fixture.js';

const TOTAL = 3_000;
const PER_REQUEST = 50;

const { startedAt } = useReplicatedClickHouse('zookeeper-outage');
const gw = useGatewayFixture();
const replicated = useReplicatedProcessor(gw, 'zookeeper-outage');
afterAll(async () => {
  await startZooKeeper();
});

/** The 1-valued causes of ingest_clickhouse_insert_failing in a /metrics text. */
function failingCauses(text: string): string[] {
  const prefix = `${METRIC_NAMES.clickhouseInsertFailing}{`;
  return text
    .split('\n')
    .filter((line) => line.startsWith(prefix) && line.trim().endsWith(' 1'))
    .map((line) => /cause="([^"]+)"/.exec(line)?.[1] ?? '?');
}

describe('a ZooKeeper outage under load', () => {
  it('shows in /readyz and the failing metric with its cause, and loses nothing answered 202', async () => {
    const { fleet, processor, account, client, database: db, requests } = await replicated.start({ idPrefix: 'zk', total: TOTAL, perRequest: PER_REQUEST });
    const stats = newStats();
    // About 20 s of load (150 events/s): the outage falls inside it.
    const load = runPool(requests, { concurrency: 2, perSecond: 3 }, (events) => postEvents(client, events, stats));

    await waitFor(
      async () => {
        const c = await countsOn(1, db, account.id);
        return c.distinct >= 300 ? c : undefined;
      },
      { description: 'events stored before the outage', timeoutMs: 60_000, intervalMs: 100 },
    );
    await killZooKeeper();
    const killedAt = Date.now();

    const notReady = await waitFor(
      async () => {
        const h = await processor.health();
        return h.ready === 503 && h.waitingFor?.some((w) => w.includes('cause: zookeeper')) ? h : undefined;
      },
      { description: 'the processor not ready, naming ZooKeeper', timeoutMs: 90_000, intervalMs: 500 },
    );
    expect(notReady.live).toBe(200);
    expect(failingCauses(await processor.metrics())).toEqual(['zookeeper']);
    console.log(`zookeeper-outage: /readyz 503 after ${Math.round((Date.now() - killedAt) / 1000)} s: ${notReady.waitingFor?.join('; ')}`);

    await startZooKeeper();
    await load;
    expect(stats.events).toBe(TOTAL);
    for (const replica of [1, 2] as const) {
      const counts = await waitFor(
        async () => {
          const c = await countsOn(replica, db, account.id);
          return c.distinct === TOTAL ? c : undefined;
        },
        { description: `all ${TOTAL} events on replica ${replica} after ZooKeeper returned`, timeoutMs: 180_000, intervalMs: 500 },
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
      `zookeeper-outage: ${TOTAL} events accepted during the outage and stored once on both replicas; ${Math.round((Date.now() - startedAt) / 1000)} s in all`,
    );
  });
});

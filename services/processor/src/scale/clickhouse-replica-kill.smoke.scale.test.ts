/**
 * Real servers: Kafka (the stack's broker), Redis, and replicated ClickHouse: ZooKeeper and two
 * 18.16 replicas of one shard (scripts/stack-clickhouse-cluster.sh, started here if not up). The
 * test database is made by the migrations ON CLUSTER (Replicated*MergeTree). The gateway app in
 * process (its read-back reads as the read-only user), the processor as a real OS process, both
 * with CLICKHOUSE_URL listing both replicas, the first preferred.
 *
 * Replica 1, where the writer inserts, is SIGKILLed while events arrive. The writer retries the
 * same batch on replica 2, whose block deduplication (ZooKeeper keeps the blocks' hashes for the
 * table, not per replica) drops a batch replica 1 had stored before it died. Meanwhile the
 * gateway's read-back is served by replica 2, which holds nothing twice (count() = uniqExact(event_id),
 * no FINAL, no forced merge). Replica 1 started again: both replicas hold every event answered 202,
 * once (parts replica 1 had not handed over yet waited on its disk: replication is asynchronous).
 * The processor stays ready meanwhile, its replica watch naming replica 1 `unreachable` under
 * /readyz `degraded` until it is back (and replica 2 `peer_unreachable` once its fetches from
 * replica 1 have failed 3 times).
 */
import { createClickHouse, METRIC_NAMES, replicaName } from '@ingest/platform';
import { killReplica, metricSum, replicaUrl, startReplica, storedEvent, storeEvents, waitFor } from '@ingest/testkit';
import { useGatewayFixture } from '@ingest/testkit/gateway';
import { newStats, postEvents, runPool } from '@ingest/testkit/processor';
import { afterAll, describe, expect, it } from 'vitest';
import { countsOn, useReplicatedClickHouse, useReplicatedProcessor } from './replicated-clickhouse.fixture.js';

const TOTAL = 4_000;
const PER_REQUEST = 50;

const { startedAt: started } = useReplicatedClickHouse('replica-kill');
const gw = useGatewayFixture();
// The broker's smallest session timeout: a consumer whose first commit meets a rebalance starts a
// new membership, and when leaving fails it waits for the old one to expire. With the default
// 30 s the whole load was then stored in one insert before the kill (npm run test:scale,
// 2026-11-29: "SIGKILLed with 4000 events stored", so the writer never met the dead replica).
const replicated = useReplicatedProcessor(gw, 'replica-kill', { KAFKA_SESSION_TIMEOUT_MS: '6000' });
afterAll(async () => {
  // A replica this test killed is started again, so the next test (and the database drop) finds both.
  await startReplica(1);
});

describe('a ClickHouse replica SIGKILLed during inserts', () => {
  it('loses nothing, stores nothing twice, reads from the other replica, and catches up after its restart', async () => {
    const {
      fleet,
      processor,
      account,
      apiKey,
      client,
      database: db,
      requests,
    } = await replicated.start({ idPrefix: 'rk', total: TOTAL, perRequest: PER_REQUEST });
    const stats = newStats();
    // About 16 s of load (250 events/s): the kill falls in its middle, after a stall of the
    // consumer (above) too.
    const load = runPool(requests, { concurrency: 4, perSecond: 5 }, (events) => postEvents(client, events, stats));

    const before = await waitFor(
      async () => {
        const c = await countsOn(1, db, account.id);
        return c.distinct >= TOTAL / 5 ? c : undefined;
      },
      { description: `a fifth of the events stored on replica 1 before the kill`, timeoutMs: 60_000, intervalMs: 100 },
    );
    await killReplica(1);
    const killedAt = Date.now();
    console.log(`replica-kill: replica 1 SIGKILLed with ${before.distinct} events stored, ${stats.events} accepted`);

    await load;
    expect(stats.events).toBe(TOTAL);
    // While replica 1 is down: the last event, accepted well after the kill, is stored on replica 2
    // and read back from it. (Parts replica 1 stored and replica 2 had not fetched yet wait on
    // replica 1's disk: replication is asynchronous, no insert_quorum; docs/scale.md.)
    const last = `rk-${TOTAL - 1}`;
    const readBack = await waitFor(
      async () => {
        const res = await gw.app.inject({ method: 'GET', url: `/v1/events/${last}`, headers: { authorization: `Bearer ${apiKey}` } });
        if (res.statusCode === 200) return res.json<{ eventId: string }>();
        throw new Error(`answered ${res.statusCode}: ${res.body.slice(0, 200)}; replica 2 has ${JSON.stringify(await countsOn(2, db, account.id))}`);
      },
      { description: `GET /v1/events/${last} answered 200 with replica 1 down`, timeoutMs: 60_000, intervalMs: 250 },
    );
    expect(readBack.eventId).toBe(last);
    await expect(countsOn(1, db, account.id)).rejects.toThrow(/ECONNREFUSED/);
    // Nothing twice on replica 2: a batch retried there after replica 1 stored it was deduplicated.
    const onTwo = await countsOn(2, db, account.id);
    expect(onTwo.rows).toBe(onTwo.distinct);
    // The writer did meet the dead replica (and went on with the same batch on the other).
    const insertFailures = metricSum(await processor.metrics(), METRIC_NAMES.clickhouseInsertFailures);
    expect(insertFailures, `insert failures; replica 1 was killed with ${before.distinct} of ${TOTAL} events stored`).toBeGreaterThan(0);
    // The replica watch (every 10 s) names the dead replica; the processor stays ready (it writes to replica 2).
    let seen: unknown;
    const down = await waitFor(
      async () => {
        const h = await processor.health();
        seen = h;
        return h.ready === 200 && h.degraded?.some((d) => d.startsWith(`clickhouse-replica ${replicaName(replicaUrl(1))}: unreachable (cause: unreachable;`))
          ? h
          : undefined;
      },
      {
        description: () => `the processor ready with replica 1 unreachable under degraded (last /readyz: ${JSON.stringify(seen)})`,
        timeoutMs: 20_000,
        intervalMs: 250,
      },
    );
    // Replica 2 may name the dead replica too: its fetches of parts only replica 1 holds fail with
    // "Connection refused" (3 tries take a few seconds), cause peer_unreachable; never another cause.
    const replicaTwo = replicaName(replicaUrl(2)).replaceAll('.', '\\.');
    const others = (down.degraded ?? []).filter((d) => !d.startsWith(`clickhouse-replica ${replicaName(replicaUrl(1))}: unreachable`));
    expect(others).toEqual(
      others.length === 0 ? [] : [expect.stringMatching(new RegExp(`^clickhouse-replica ${replicaTwo}: replication failing \\(cause: peer_unreachable;`))],
    );
    const downFor = Math.round((Date.now() - killedAt) / 1000);

    await startReplica(1);
    // Both replicas end with every event, once: replica 1 fetched what it missed, replica 2 what
    // only replica 1 had when it died.
    for (const replica of [1, 2] as const) {
      const counts = await waitFor(
        async () => {
          const c = await countsOn(replica, db, account.id);
          if (c.distinct === TOTAL) return c;
          throw new Error(`replica ${replica} has ${JSON.stringify(c)}`);
        },
        { description: `replica ${replica} with all ${TOTAL} events after replica 1's restart`, timeoutMs: 60_000, intervalMs: 250 },
      );
      expect(counts).toEqual({ rows: TOTAL, distinct: TOTAL });
    }
    await waitFor(
      async () => {
        const h = await processor.health();
        seen = h;
        return h.ready === 200 && h.degraded === undefined ? h : undefined;
      },
      {
        description: () => `the processor ready and no longer degraded once replica 1 is back (last /readyz: ${JSON.stringify(seen)})`,
        timeoutMs: 30_000,
        intervalMs: 250,
      },
    );
    expect(fleet.unexpectedExits()).toEqual([]);
    console.log(
      `replica-kill: ${TOTAL} events accepted (${stats.retried} 503s retried), ${insertFailures} failed insert attempts retried; replica 2 held ${onTwo.distinct} ` +
        `(once each) with replica 1 down ${downFor} s, both ${TOTAL} once each after its restart; ${Math.round((Date.now() - started) / 1000)} s in all, replica start included`,
    );
  });
});

describe('block deduplication of the replicated events table (what the writer relies on)', () => {
  it('drops a batch retried with the same bytes on the other replica, and keeps a batch whose bytes differ', async () => {
    await startReplica(1); // running already unless the test above failed before restarting it
    const db = gw.clickhouse.database;
    const accountId = `acc_dedup_${Date.now()}`;
    const batch = Array.from({ length: 100 }, (_, i) => storedEvent(accountId, { eventId: `dd-${i}` }));
    const insertedAtMs = Date.now();
    const one = createClickHouse({ url: replicaUrl(1), database: db });
    const two = createClickHouse({ url: replicaUrl(2), database: db });
    try {
      // The writer's retry: the same lines (one inserted_at per batch), first on replica 1, then on 2.
      await storeEvents(one, batch, insertedAtMs);
      await storeEvents(two, batch, insertedAtMs);
      await storeEvents(one, batch, insertedAtMs);
      expect(await countsOn(2, db, accountId)).toEqual({ rows: 100, distinct: 100 });
      // The same events in a batch built again (a new inserted_at: a restart's re-read) are other
      // bytes: stored again, until ReplacingMergeTree merges them (FINAL counts them once).
      await storeEvents(two, batch, insertedAtMs + 1_000);
      expect(await countsOn(2, db, accountId)).toEqual({ rows: 200, distinct: 100 });
    } finally {
      await Promise.all([one.close(), two.close()]);
    }
  });
});

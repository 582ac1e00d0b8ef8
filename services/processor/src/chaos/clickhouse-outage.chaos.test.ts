/**
 * Real servers: Kafka, ClickHouse, Redis; the real gateway app in process (fastify inject) and
 * the processor as a real OS process. The shared ClickHouse of the local stack is stopped
 * (SIGTERM to the server scripts/stack.sh started) for 30 s in the middle of a load: the gateway
 * keeps answering 202 (it needs only Kafka and Redis), the events wait in Kafka, and once
 * ClickHouse is back every event arrives exactly once and the consumer lag drains to zero.
 * This file must run alone (the chaos project runs one file at a time, after everything else).
 */
import { METRIC_NAMES } from '@ingest/platform';
import { waitFor } from '@ingest/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type GatewayFixture } from '@ingest/testkit/gateway';
import { ensureClickHouseUp, stackClickHousePid, startClickHouse, stopClickHouse } from '@ingest/testkit';
import { type ApiClient, newStats, postEvents, runPool, testEvent, toRequests } from '@ingest/testkit/processor';
import { eventCounts, waitForDrained } from '@ingest/testkit/processor';
import { lagByGroup, metricSum, ProcessorFleet, type ProcessorProcess, processorSetup } from '@ingest/testkit';

const OUTAGE_MS = 30_000;
const BEFORE = 8_000;
const DURING = 8_000;
const AFTER = 4_000;
const TOTAL = BEFORE + DURING + AFTER;

let gw: GatewayFixture;
let fleet: ProcessorFleet | undefined;

beforeAll(async () => {
  // Fail before anything starts when the server is not the stack's to stop.
  stackClickHousePid();
  gw = await createGatewayFixture();
});

afterEach(async () => {
  await fleet?.killAll();
});

afterAll(async () => {
  await ensureClickHouseUp();
  await gw?.close();
});

const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => [testEvent(`out-${from + i}`, from + i)]);

async function lagOf(p: ProcessorProcess): Promise<Map<string, number>> {
  return lagByGroup(await p.metrics());
}

describe('ClickHouse stopped for 30 s under load', () => {
  it('keeps accepting, holds the events in Kafka, and stores each exactly once when ClickHouse is back', async () => {
    const started = Date.now();
    const setup = processorSetup(gw.kafka.prefix, gw.clickhouse.database, 'outage');
    // The groups whose lag the processor reports (the copiers' groups have no lag metric).
    const groups = [setup.groups.storage, setup.groups.dedupe, setup.groups.jobs];
    fleet = new ProcessorFleet(setup);
    const { account, apiKey } = await gw.newAccount('growth');
    const client: ApiClient = { app: gw.app, apiKey };
    const stats = newStats();
    const processor = await fleet.start();

    await runPool(toRequests(ids(0, BEFORE), 100), { concurrency: 8 }, (r) => postEvents(client, r, stats));
    // ClickHouse goes away while the processor is busy with the first events.
    let peakLag = 0;
    let downAt: number;
    let upAt: number;
    try {
      await stopClickHouse();
      downAt = Date.now();
      // Spread over the first half of the outage.
      const perSecond = DURING / 100 / (OUTAGE_MS / 2 / 1_000);
      const during = runPool(toRequests(ids(BEFORE, BEFORE + DURING), 100), { concurrency: 8, perSecond }, (r) => postEvents(client, r, stats));
      during.catch(() => {}); // awaited below; this only keeps an early failure from being unhandled
      // The lag collector (every 10 s) sees the events piling up in Kafka in front of storage.
      const storageLag = async () => (await lagOf(processor)).get(setup.groups.storage) ?? 0;
      await waitFor(
        async () => {
          peakLag = Math.max(peakLag, await storageLag());
          return peakLag > 0;
        },
        { description: 'storage consumer lag above 0 while ClickHouse is down', timeoutMs: OUTAGE_MS - 5_000, intervalMs: 1_000 },
      );
      await during;
      // Every request was answered 202 at the first attempt: the gateway does not need ClickHouse.
      expect(stats.retried).toBe(0);
      const left = OUTAGE_MS - (Date.now() - downAt);
      // The deliberate outage: ClickHouse stays down for its full duration.
      if (left > 0) await new Promise((r) => setTimeout(r, left));
      peakLag = Math.max(peakLag, await storageLag());
      const failures = metricSum(await processor.metrics(), METRIC_NAMES.clickhouseInsertFailures);
      console.log(`clickhouse-outage: down for ${Date.now() - downAt} ms; ${failures} failed insert attempts so far; peak storage lag ${peakLag}`);
      // The writer really hit the outage and kept retrying instead of dropping or crashing.
      expect(failures).toBeGreaterThan(0);
      expect(fleet.unexpectedExits()).toEqual([]);
    } finally {
      await startClickHouse();
      upAt = Date.now();
    }
    expect(stats.events).toBe(BEFORE + DURING);

    await runPool(toRequests(ids(BEFORE + DURING, TOTAL), 100), { concurrency: 8 }, (r) => postEvents(client, r, stats));
    expect(stats.events).toBe(TOTAL);

    const stored = await waitFor(
      async () => {
        const c = await eventCounts(gw.clickhouse.ch, account.id);
        return c.distinct === TOTAL ? c : undefined;
      },
      { description: `${TOTAL} distinct events in ClickHouse after the outage`, timeoutMs: 180_000, intervalMs: 500 },
    );
    const arrivedAfterMs = Date.now() - upAt;
    await waitForDrained(gw.kafka, setup, 120_000);
    const final = await eventCounts(gw.clickhouse.ch, account.id);
    expect(final).toMatchObject({ distinct: TOTAL, final: TOTAL, view: TOTAL, metered: TOTAL });

    // The processor's own view: every group it watches is back to zero lag.
    await waitFor(
      async () => {
        const l = await lagOf(processor);
        return groups.every((g) => l.get(g) === 0);
      },
      { description: `ingest_consumer_lag_messages back to 0 for ${groups.join(', ')}`, timeoutMs: 60_000, intervalMs: 1_000 },
    );
    expect(fleet.unexpectedExits()).toEqual([]);
    console.log(
      `clickhouse-outage: ${TOTAL} events (${DURING} sent while ClickHouse was down, ${stats.retried} retried 503s); all stored ${arrivedAfterMs} ms after ClickHouse was back; ` +
        `rows before merges ${stored.rawRows}/${final.rawRows}, FINAL ${final.final}; peak storage lag ${peakLag}; ${Math.round((Date.now() - started) / 1000)} s`,
    );
  });
});

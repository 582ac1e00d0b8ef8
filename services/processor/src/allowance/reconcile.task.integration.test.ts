/**
 * Real servers: Kafka, ClickHouse, Redis. The allowance counter, inflated by what the gateway
 * cannot know (a repeat it counted, a bulk job's count), becomes exact once the pipeline has
 * stored the events: exact unique events before hour T + what was counted from T on.
 */
import type { EventRecord } from '@ingest/schemas';
import { type Account, createAllowance, createAllowanceReconciler, allowanceKeys, allowancePeriod } from '@ingest/domain';
import { createMetricsRegistry, createProducer, createRedis, type Component, type Producer } from '@ingest/platform';
import {
  createTestClickHouse,
  createTestKafka,
  integrationEnv,
  sampleValue,
  type TestClickHouse,
  type TestKafka,
  TEST_SEEN_IDS_KEY,
  testLogger,
  uniqueSuffix,
} from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProcessor } from '../processor.js';
import { waitForPipeline } from '../pipeline-progress.js';
import { createExactCountsStore } from './exact-counts.store.js';
import { createAllowanceReconcileTask } from './reconcile.task.js';

let kafka: TestKafka;
let clickhouse: TestClickHouse;
let producer: Producer;
let redis: ReturnType<typeof createRedis>;
const dedupeGroupId = `dedupe-${uniqueSuffix()}`;
const storageGroupId = `storage-${uniqueSuffix()}`;
// Its own Redis namespace: the reconciler touches every counter it finds.
const keyPrefix = `t${uniqueSuffix()}:`;
let parts: Component[] = [];

const HOUR = 3_600_000;
// A fixed clock in the middle of the current month, so "two hours ago" is in the same month.
const period = allowancePeriod(Date.now());
const NOW = period.start.getTime() + 14 * 24 * HOUR + 12 * HOUR + 40 * 60_000;

beforeAll(async () => {
  [kafka, clickhouse] = await Promise.all([
    createTestKafka(['eventsRaw', 'eventsUnique', 'dedupeChangelog', 'deadLetters', 'jobChunks']),
    createTestClickHouse(),
  ]);
  producer = createProducer(kafka.kafka);
  redis = createRedis({ url: integrationEnv().redisUrl });
  await Promise.all([producer.connect(), redis.connect()]);
  parts = createProcessor({
    kafka: kafka.kafka,
    producer,
    ch: clickhouse.ch,
    redis,
    redisKeyPrefix: keyPrefix,
    logger: testLogger(),
    metrics: createMetricsRegistry('reconciler-test'),
    topicPrefix: kafka.prefix,
    partitionsConsumedConcurrently: 3,
    groups: { jobs: `jobs-${uniqueSuffix()}`, storage: storageGroupId, dedupe: dedupeGroupId },
    dedupe: { windowMs: 7 * 24 * HOUR },
  });
  for (const p of parts) await p.start();
});

afterAll(async () => {
  for (const p of parts) await p.stop();
  await producer?.disconnect();
  await redis?.close();
  await Promise.allSettled([kafka?.cleanup(), clickhouse?.cleanup()]);
});

function account(): Account {
  return { id: `acc_${uniqueSuffix()}`, name: 'T', plan: 'pro', createdAt: '', updatedAt: '' };
}

function record(accountId: string, eventId: string, receivedAtMs: number): EventRecord {
  return {
    v: 1,
    accountId,
    eventId,
    eventName: 'Used',
    email: 'a@b.io',
    domain: null,
    timestampMs: receivedAtMs,
    receivedAtMs,
    properties: {},
    source: 'bulk',
    jobId: null,
  };
}

describe('allowance reconciler', () => {
  it('sets each counter to the exact count before the last full hour plus what came after', async () => {
    const a = account();
    const ghost = account();
    const twoHoursAgo = NOW - 2 * HOUR;
    // A bulk job of 6 counted two hours ago, of which 5 are unique (e1 comes twice).
    const allowanceThen = createAllowance({ redis, keyPrefix, now: () => twoHoursAgo, seenIdsKey: Buffer.from(TEST_SEEN_IDS_KEY) });
    await allowanceThen.reserveJob(a, 'job-a', 6, twoHoursAgo);
    await producer.send(
      kafka.topic('eventsRaw'),
      ['e1', 'e2', 'e3', 'e4', 'e5', 'e1'].map((id) => ({ key: `${a.id}:${id}`, value: JSON.stringify(record(a.id, id, twoHoursAgo)) })),
    );
    // Two events counted ten minutes ago: after T, they stay as counted.
    await createAllowance({ redis, keyPrefix, now: () => NOW - 10 * 60_000, seenIdsKey: Buffer.from(TEST_SEEN_IDS_KEY) }).reserveEvents(a, [
      'late-1',
      'late-2',
    ]);
    // An account whose counted events never arrived (e.g. a job that failed validation).
    await allowanceThen.reserveJob(ghost, 'job-ghost', 3, twoHoursAgo);
    expect(Number(await redis.get(allowanceKeys(a.id, period.id, keyPrefix).counter))).toBe(8);

    const metrics = createMetricsRegistry('processor');
    const stages = [
      { groupId: dedupeGroupId, topic: kafka.topic('eventsRaw') },
      { groupId: storageGroupId, topic: kafka.topic('eventsUnique') },
    ];
    const reconciler = createAllowanceReconcileTask({
      counts: createExactCountsStore(clickhouse.ch),
      allowance: createAllowanceReconciler(redis, keyPrefix),
      metrics,
      // It waits for these groups to have passed everything on: no polling of ClickHouse here.
      pipelineCaughtUp: () => waitForPipeline(kafka.kafka, stages, { timeoutMs: 30_000 }),
      logger: testLogger(),
      intervalMs: 60_000,
      now: () => NOW,
    });
    // While its jobs have not run, their reservations stay counted as pending.
    await reconciler.runOnce();
    expect(Number(await redis.get(allowanceKeys(a.id, period.id, keyPrefix).counter))).toBe(5 + 2 + 6);
    expect(Number(await redis.get(allowanceKeys(ghost.id, period.id, keyPrefix).counter))).toBe(3);

    // The job runner settles finished jobs (at least once: settling is idempotent): job-a
    // accepted 5 of its 6 (e1 twice), the ghost's job accepted nothing.
    await allowanceThen.settleJob({ accountId: a.id, jobId: 'job-a', receivedAtMs: twoHoursAgo, accepted: 5 });
    expect(Number(await redis.get(allowanceKeys(a.id, period.id, keyPrefix).counter))).toBe(5 + 2 + 5);
    await allowanceThen.settleJob({ accountId: a.id, jobId: 'job-a', receivedAtMs: twoHoursAgo, accepted: 5 });
    await allowanceThen.settleJob({ accountId: ghost.id, jobId: 'job-ghost', receivedAtMs: twoHoursAgo, accepted: 0 });
    expect(Number(await redis.get(allowanceKeys(ghost.id, period.id, keyPrefix).counter))).toBe(0);
    const result = await reconciler.runOnce();
    const [stored] = await clickhouse.ch.query<{ n: string }>(`SELECT count() AS n FROM events FINAL WHERE account_id = '${a.id}'`);
    expect(Number(stored?.n)).toBe(5);
    expect(result).toMatchObject({ fromHour: Math.floor(NOW / HOUR) });
    expect(Number(await redis.get(allowanceKeys(a.id, period.id, keyPrefix).counter))).toBe(5 + 2);
    expect(Number(await redis.get(allowanceKeys(ghost.id, period.id, keyPrefix).counter))).toBe(0);
    // Running again changes nothing.
    await reconciler.runOnce();
    expect(Number(await redis.get(allowanceKeys(a.id, period.id, keyPrefix).counter))).toBe(7);

    const text = await metrics.metrics();
    expect(sampleValue(text, 'ingest_usage_reconcile_runs_total', { outcome: 'reconciled' })).toBe(3);
    expect(sampleValue(text, 'ingest_usage_reconcile_runs_total', { outcome: 'failed' })).toBe(0);
    // Both accounts (a and the ghost) in each of the three rounds.
    expect(sampleValue(text, 'ingest_usage_reconciled_accounts_total')).toBe(6);
    expect(sampleValue(text, 'ingest_usage_reconcile_last_success_timestamp_seconds')).toBe(NOW / 1000);
  });

  it('skips a round while the pipeline has not stored everything yet', async () => {
    const metrics = createMetricsRegistry('processor');
    let clock = NOW;
    const reconciler = createAllowanceReconcileTask({
      counts: createExactCountsStore(clickhouse.ch),
      allowance: createAllowanceReconciler(redis, keyPrefix),
      metrics,
      // A group that never consumed a topic with messages in it.
      pipelineCaughtUp: () => waitForPipeline(kafka.kafka, [{ groupId: `idle-${uniqueSuffix()}`, topic: kafka.topic('eventsRaw') }], { timeoutMs: 500 }),
      logger: testLogger(),
      intervalMs: 60_000,
      now: () => clock,
    });
    clock = NOW + 60_000;
    expect(await reconciler.runOnce()).toEqual({ skipped: 'pipeline has not caught up', outcome: 'pipeline_behind' });
    const text = await metrics.metrics();
    expect(sampleValue(text, 'ingest_usage_reconcile_runs_total', { outcome: 'pipeline_behind' })).toBe(1);
    expect(sampleValue(text, 'ingest_usage_reconcile_runs_total', { outcome: 'reconciled' })).toBe(0);
    // A skipped round is not a success: the age keeps counting from the start.
    expect(sampleValue(text, 'ingest_usage_reconcile_last_success_timestamp_seconds')).toBe(NOW / 1000);
  });
});

/**
 * Real servers: Kafka, ClickHouse, Redis; the real gateway app and the real processor in this
 * process, on one simulated clock. What an account is charged after bulk jobs with repeated
 * eventIds, before and after the allowance reconciler has corrected the counter from ClickHouse.
 *
 * Regression: a finished job's reservation used to be dropped at settlement, so once a
 * reconcile round ran its events vanished from `used` until the next hour: a 1,000-event bulk
 * with 100 in-job repeats read `used: 0`, and an account could store more than its plan allows.
 */
import type { JobStatus } from '@ingest/schemas';
import { type Component, createMetricsRegistry } from '@ingest/platform';
import { createAllowanceReconciler, allowancePeriod } from '@ingest/domain';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { createProcessor } from '../processor.js';
import { waitForPipeline } from '../pipeline-progress.js';
import { createExactCountsStore } from './exact-counts.store.js';
import { createAllowanceReconcileTask } from './reconcile.task.js';

const HOUR = 3_600_000;
// Mid-month, so an hour later is the same month; moved forward by the tests.
let clock = allowancePeriod(Date.now()).start.getTime() + 14 * 24 * HOUR + 12 * HOUR + 10 * 60_000;
const now = () => clock;

// Its own Redis namespace: the reconciler sets every counter it finds.
const keyPrefix = `t${uniqueSuffix()}:`;
let gw: GatewayFixture;
let parts: Component[] = [];
let reconciler: ReturnType<typeof createAllowanceReconcileTask>;

beforeAll(async () => {
  gw = await createGatewayFixture({ REDIS_KEY_PREFIX: keyPrefix }, { now });
  const groups = { jobs: `jobs-${uniqueSuffix()}`, dedupe: `dedupe-${uniqueSuffix()}`, storage: `storage-${uniqueSuffix()}` };
  parts = createProcessor({
    kafka: gw.kafka.kafka,
    producer: gw.producer,
    ch: gw.clickhouse.ch,
    redis: gw.redis,
    redisKeyPrefix: keyPrefix,
    logger: testLogger(),
    metrics: createMetricsRegistry('billing-e2e'),
    topicPrefix: gw.kafka.prefix,
    partitionsConsumedConcurrently: 3,
    now,
    groups: { jobs: groups.jobs, storage: groups.storage, dedupe: groups.dedupe },
    dedupe: { windowMs: 7 * 24 * HOUR },
  });
  for (const p of parts) await p.start();
  const stages = [
    { groupId: groups.dedupe, topic: gw.kafka.topic('eventsRaw') },
    { groupId: groups.storage, topic: gw.kafka.topic('eventsUnique') },
  ];
  reconciler = createAllowanceReconcileTask({
    counts: createExactCountsStore(gw.clickhouse.ch),
    allowance: createAllowanceReconciler(gw.redis, keyPrefix),
    pipelineCaughtUp: () => waitForPipeline(gw.kafka.kafka, stages, { timeoutMs: 30_000 }),
    logger: testLogger(),
    metrics: createMetricsRegistry('billing-e2e-reconciler'),
    intervalMs: 60_000,
    now,
  });
});

afterAll(async () => {
  for (const p of parts) await p.stop();
  await gw?.close();
});

const auth = (apiKey: string) => ({ authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' });

async function used(apiKey: string): Promise<number> {
  const res = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: auth(apiKey), remoteAddress: randomClientIp() });
  expect(res.statusCode).toBe(200);
  return res.json<{ used: number }>().used;
}

async function storedFor(accountId: string): Promise<number> {
  const [row] = await gw.clickhouse.ch.query<{ n: string }>(`SELECT uniqExact(event_id) AS n FROM events WHERE account_id = '${accountId}'`);
  return Number(row?.n ?? 0);
}

function bulk(apiKey: string, eventIds: string[]) {
  return gw.app.inject({
    method: 'POST',
    url: '/v1/events/bulk',
    headers: auth(apiKey),
    payload: { events: eventIds.map((eventId) => ({ eventName: 'Imported', email: 'a@b.io', eventId })) },
    remoteAddress: randomClientIp(),
  });
}

async function completed(apiKey: string, jobId: string): Promise<JobStatus> {
  return waitFor(
    async () => {
      const res = await gw.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: auth(apiKey), remoteAddress: randomClientIp() });
      const status = res.json<JobStatus>();
      if (status.status !== 'completed') throw new Error(`job ${jobId} is ${status.status} (${status.processed}/${status.totalEvents})`);
      return status;
    },
    { description: `job ${jobId} completed`, timeoutMs: 60_000 },
  );
}

const ids = (prefix: string, n: number, from = 0) => Array.from({ length: n }, (_, i) => `${prefix}-${from + i}`);

describe('billing of bulk jobs', () => {
  it('charges a bulk job with in-job repeats what it accepted, before and after reconciliation', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    // 1,000 events of which the last 100 repeat ids of the same job.
    const res = await bulk(apiKey, [...ids('r', 900), ...ids('r', 100)]);
    expect(res.statusCode).toBe(202);
    expect(await used(apiKey)).toBe(1_000); // reserved until the job has run
    const job = await completed(apiKey, res.json().jobId);
    expect(job).toMatchObject({ accepted: 900, duplicates: 100, rejected: 0 });
    expect(await used(apiKey)).toBe(900);

    // A round in the same hour: the job's events are not in a complete hour yet.
    clock += 5 * 60_000;
    expect(await reconciler.runOnce()).toMatchObject({ fromHour: Math.floor(clock / HOUR) });
    expect(await used(apiKey)).toBe(900);
    // An hour later ClickHouse's exact count takes over: the same.
    clock += HOUR;
    await reconciler.runOnce();
    expect(await storedFor(account.id)).toBe(900);
    expect(await used(apiKey)).toBe(900);
  });

  it('never lets an account store more than its plan allows through bulk jobs with repeats', async () => {
    // The 50,000-event reproduction scaled to the free plan (1,000): 400 API events, then bulk
    // jobs of 200 with 10 in-job repeats each, reconciled after each job.
    const { account, apiKey } = await gw.newAccount('free');
    for (let r = 0; r < 4; r++) {
      const events = ids(`api-${r}`, 100).map((eventId) => ({ eventName: 'Used', email: 'a@b.io', eventId }));
      const res = await gw.app.inject({ method: 'POST', url: '/v1/events', headers: auth(apiKey), payload: { events }, remoteAddress: randomClientIp() });
      expect(res.json()).toMatchObject({ accepted: 100 });
    }
    const answers: number[] = [];
    for (let j = 0; j < 4; j++) {
      const res = await bulk(apiKey, [...ids(`bulk-${j}`, 190), ...ids(`bulk-${j}`, 10)]);
      answers.push(res.statusCode);
      if (res.statusCode !== 202) continue;
      expect((await completed(apiKey, res.json().jobId)).accepted).toBe(190);
      clock += 60_000;
      await reconciler.runOnce();
    }
    // 400 + 3 x 190 = 970: a fourth job of 200 does not fit.
    expect(answers).toEqual([202, 202, 202, 402]);
    expect(await used(apiKey)).toBe(970);
    clock += HOUR;
    await reconciler.runOnce();
    await waitFor(
      async () => {
        const stored = await storedFor(account.id);
        if (stored !== 970) throw new Error(`ClickHouse holds ${stored} events of the account`);
        return stored;
      },
      { description: 'the account to have 970 events stored' },
    );
    expect(await used(apiKey)).toBe(970);
  });
});

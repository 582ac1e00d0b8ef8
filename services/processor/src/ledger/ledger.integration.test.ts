/**
 * Real servers: Kafka, ClickHouse, Redis; the real gateway app (API and admin API) and the real
 * processor in this process, on a simulated clock set in a month that has ended. The billing
 * ledger closes the month once, with ClickHouse's exact counts, records plan changes with
 * their time, and stays as it was when the rollups it was computed from are rebuilt.
 */
import type { BillingLedgerRecord, JobStatus } from '@ingest/schemas';
import { type Component, createMetricsRegistry, tryLease } from '@ingest/platform';
import { createAllowanceReconciler, createLedgerWriter, allowancePeriod, readAccounts, readLedgerTopic } from '@ingest/domain';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { waitForPipeline } from '../pipeline-progress.js';
import { createExactCountsStore } from '../allowance/exact-counts.store.js';
import { createProcessor } from '../processor.js';
import { createLedgerCloser } from './ledger.closer.js';

const HOUR = 3_600_000;
// The middle of the month before last: a month that has ended.
const period = allowancePeriod(allowancePeriod(allowancePeriod(Date.now()).start.getTime() - 1).start.getTime() - 1);
let clock = period.start.getTime() + 10 * 24 * HOUR;
const now = () => clock;
const keyPrefix = `t${uniqueSuffix()}:`;

let gw: GatewayFixture;
let parts: Component[] = [];
let closer: ReturnType<typeof createLedgerCloser>;

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
    metrics: createMetricsRegistry('ledger-test'),
    topicPrefix: gw.kafka.prefix,
    partitionsConsumedConcurrently: 3,
    now,
    groups: { jobs: groups.jobs, storage: groups.storage, dedupe: groups.dedupe, ledger: `ledger-${uniqueSuffix()}` },
    dedupe: { windowMs: 7 * 24 * HOUR },
  });
  for (const p of parts) await p.start();
  const ledgerTopic = gw.kafka.topic('billingLedger');
  const stages = [
    { groupId: groups.dedupe, topic: gw.kafka.topic('eventsRaw') },
    { groupId: groups.storage, topic: gw.kafka.topic('eventsUnique') },
  ];
  closer = createLedgerCloser({
    counts: createExactCountsStore(gw.clickhouse.ch),
    allowance: createAllowanceReconciler(gw.redis, keyPrefix),
    readAccounts: () => readAccounts(gw.kafka.kafka, gw.kafka.topic('controlAccounts'), testLogger()),
    readLedger: () => readLedgerTopic(gw.kafka.kafka, ledgerTopic, testLogger()),
    ledger: createLedgerWriter(gw.producer, ledgerTopic),
    pipelineCaughtUp: () => waitForPipeline(gw.kafka.kafka, stages, { timeoutMs: 30_000 }),
    lease: (periodId) => tryLease(gw.redis, `${keyPrefix}billing:close:${periodId}`, 60_000),
    logger: testLogger(),
    intervalMs: 60_000,
    now,
  });
});

afterAll(async () => {
  for (const p of parts) await p.stop();
  await gw?.close();
});

const api = (apiKey: string) => ({ authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' });
const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
const events = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ eventName: 'Used', email: 'a@b.io', eventId: `${prefix}-${i}` }));

async function send(apiKey: string, batch: unknown[]) {
  const res = await gw.app.inject({ method: 'POST', url: '/v1/events', headers: api(apiKey), payload: { events: batch }, remoteAddress: randomClientIp() });
  return res;
}

async function ledger(query: string): Promise<BillingLedgerRecord[]> {
  const res = await gw.admin.inject({ method: 'GET', url: `/admin/v1/billing/ledger?${query}`, headers: admin, remoteAddress: randomClientIp() });
  expect(res.statusCode).toBe(200);
  return res.json<{ records: BillingLedgerRecord[] }>().records;
}

describe('billing ledger', () => {
  it('closes an ended month once with exact counts and plan changes, unchanged by a rollup rebuild', async () => {
    const a = await gw.newAccount('pro');
    const b = await gw.newAccount('free');
    // A: 30 API events (5 of them sent again), then a bulk job of 20 with 5 in-job repeats.
    expect((await send(a.apiKey, events('a', 30))).json()).toMatchObject({ accepted: 30 });
    expect((await send(a.apiKey, events('a', 5))).statusCode).toBe(202);
    const job = await gw.app.inject({
      method: 'POST',
      url: '/v1/events/bulk',
      headers: api(a.apiKey),
      payload: { events: [...events('bulk', 15), ...events('bulk', 5)] },
      remoteAddress: randomClientIp(),
    });
    expect(job.statusCode).toBe(202);
    await waitFor(
      async () => {
        const res = await gw.app.inject({ method: 'GET', url: `/v1/jobs/${job.json().jobId}`, headers: api(a.apiKey), remoteAddress: randomClientIp() });
        const status = res.json<JobStatus>();
        if (status.status !== 'completed') throw new Error(`job is ${status.status}`);
        return status;
      },
      { description: 'the bulk job to complete', timeoutMs: 60_000 },
    );
    // A moves from pro to growth in the middle of the month.
    clock += 24 * HOUR;
    const changed = await gw.admin.inject({ method: 'PUT', url: `/admin/v1/accounts/${a.account.id}/plan`, headers: admin, payload: { plan: 'growth' } });
    expect(changed.statusCode).toBe(200);
    // B (free, 1,000) sends 1,005 events: 5 are refused for the allowance.
    for (let i = 0; i < 10; i++) await send(b.apiKey, events(`b${i}`, 100));
    expect((await send(b.apiKey, events('b-last', 5))).statusCode).toBe(402);

    // The month has not ended: earlier months are checked (nothing of theirs), this one is not.
    const early = await closer.runOnce();
    expect(early).toMatchObject({ closed: 0 });
    expect('periods' in early && early.periods).not.toContain(period.id);
    clock = period.end.getTime() + 2 * HOUR;
    const first = await closer.runOnce();
    expect(first).toMatchObject({ deferred: 0 });
    expect('closed' in first && first.closed).toBeGreaterThanOrEqual(2);

    const expected = [
      {
        kind: 'plan_changed',
        accountId: a.account.id,
        period: period.id,
        plan: 'growth',
        previousPlan: 'pro',
        limit: 500_000,
        eventsCharged: 45,
        overageRefused: 0,
      },
      { kind: 'period_closed', accountId: a.account.id, period: period.id, plan: 'growth', limit: 500_000, eventsCharged: 45, overageRefused: 0 },
      { kind: 'period_closed', accountId: b.account.id, period: period.id, plan: 'free', limit: 1_000, eventsCharged: 1_000, overageRefused: 5 },
    ];
    const read = (accountId: string) =>
      waitFor(
        async () => {
          const records = await ledger(`period=${period.id}&accountId=${accountId}`);
          if (!records.some((r) => r.kind === 'period_closed')) throw new Error(`ledger of ${accountId} so far: ${JSON.stringify(records)}`);
          return records;
        },
        { description: `the closed month of ${accountId} in ClickHouse` },
      );
    const before = [...(await read(a.account.id)), ...(await read(b.account.id))];
    expect(before).toMatchObject(expected);
    expect(before.find((r) => r.kind === 'period_closed')?.at).toBe(period.end.toISOString());

    // Closing again writes nothing.
    expect(await closer.runOnce()).toMatchObject({ closed: 0 });

    // The rollup the counts came from is rebuilt (empty): the closed month stays as it was.
    await gw.clickhouse.ch.command('DROP TABLE usage_hourly_mv');
    await gw.clickhouse.ch.command('DROP TABLE usage_hourly');
    await gw.clickhouse.ch.command(
      "CREATE TABLE usage_hourly (account_id String, hour DateTime('UTC'), events AggregateFunction(uniqExact, String)) ENGINE = AggregatingMergeTree() PARTITION BY toYYYYMM(hour) ORDER BY (account_id, hour)",
    );
    expect(await closer.runOnce()).toMatchObject({ closed: 0 });
    const after = [...(await read(a.account.id)), ...(await read(b.account.id))];
    expect(after).toEqual(before);

    // The same records as CSV, for invoicing.
    const csv = await gw.admin.inject({
      method: 'GET',
      url: `/admin/v1/billing/ledger?period=${period.id}&accountId=${b.account.id}&format=csv`,
      headers: admin,
    });
    expect(csv.headers['content-type']).toContain('text/csv');
    expect(csv.body.split('\r\n')).toEqual([
      'kind,accountId,period,at,plan,previousPlan,limit,eventsCharged,overageRefused,recordedAt',
      `period_closed,${b.account.id},${period.id},${period.end.toISOString()},free,,1000,1000,5,${after.find((r) => r.accountId === b.account.id)?.recordedAt}`,
      '',
    ]);
  });
});

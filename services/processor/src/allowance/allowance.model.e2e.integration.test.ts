/**
 * Real servers: Kafka, ClickHouse, Redis; the real gateway app and processor in this process on
 * one simulated clock. The allowance model (allowance.model.fixture.ts) end to end: random sequences of
 * API requests, bulk and CSV jobs (with repeats and invalid rows), job runs, reconciliation
 * rounds and clock moves, sent over HTTP; after each, `used` (GET /v1/usage) stays between the
 * model and its documented window; after settlement it equals the model and ClickHouse's count.
 *
 * METERING_MODEL_E2E_RUNS sets the number of sequences (default 20), METERING_MODEL_E2E_SEED replays
 * one. A failing sequence is printed as found; with METERING_MODEL_E2E_SHRINK=1 it is shrunk
 * first (each try is a run over the real servers: minutes, so not in npm test).
 */
import type { JobStatus } from '@ingest/schemas';
import { type Component, createMetricsRegistry } from '@ingest/platform';
import { createAllowanceReconciler, PLAN_LIMITS, allowancePeriod } from '@ingest/domain';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { createProcessor } from '../processor.js';
import { AccountModel, type IdSpec, type Op, opArbitrary, startArbitrary } from './allowance.model.fixture.js';
import { waitForPipeline } from '../pipeline-progress.js';
import { createExactCountsStore } from './exact-counts.store.js';
import { createAllowanceReconcileTask } from './reconcile.task.js';

const HOUR = 3_600_000;
const keyPrefix = `t${uniqueSuffix()}:`;
let clock = Date.UTC(2026, 1, 1);
const now = () => clock;
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
    metrics: createMetricsRegistry('allowance-model-e2e'),
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
    metrics: createMetricsRegistry('allowance-model-e2e-reconciler'),
    intervalMs: 60_000,
    now,
  });
});

afterAll(async () => {
  for (const p of parts) await p.stop();
  await gw?.close();
});

/** One sequence: one fresh free-plan account, driven over HTTP. */
class HttpSequence {
  readonly log: string[] = [];
  private readonly model = new AccountModel(PLAN_LIMITS.free, { jobsRunUnobserved: true });
  private readonly jobs: { jobId: string; acceptedIds: Set<string>; receivedAtMs: number }[] = [];
  private generated = 0;

  constructor(
    private readonly accountId: string,
    private readonly apiKey: string,
  ) {}

  private fail(message: string): never {
    throw new Error(`${message}\n  at ${new Date(clock).toISOString()}; ops:\n    ${this.log.join('\n    ')}`);
  }

  private headers(json = true) {
    return { authorization: `Bearer ${this.apiKey}`, ...(json ? { 'content-type': 'application/json' } : {}) };
  }

  private event(spec: IdSpec, valid = true) {
    return { eventName: 'Used', ...(valid ? { email: 'a@b.io' } : {}), ...(spec === 'gen' ? {} : { eventId: `e${spec}` }) };
  }

  async used(): Promise<number> {
    const res = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: this.headers(false), remoteAddress: randomClientIp() });
    return res.json<{ used: number }>().used;
  }

  async apply(op: Op): Promise<void> {
    this.log.push(JSON.stringify(op));
    const period = allowancePeriod(clock).id;
    const bound = this.model.upperBound(period);
    switch (op.kind) {
      case 'api': {
        const res = await gw.app.inject({
          method: 'POST',
          url: '/v1/events',
          headers: this.headers(),
          payload: { events: op.ids.map((s) => this.event(s)) },
          remoteAddress: randomClientIp(),
        });
        if (res.statusCode === 402) {
          if (bound < this.model.limit) this.fail(`402 while the model allows at most ${bound} of ${this.model.limit}`);
          break;
        }
        const body = res.json<{ eventIds: string[]; errors?: { code: string }[] }>();
        const refused = (body.errors ?? []).filter((e) => e.code === 'quota_exceeded').length;
        const fresh = new Set(body.eventIds);
        if (refused > 0 && bound + fresh.size < this.model.limit) this.fail(`${refused} refused while the model allows ${bound} + ${fresh.size}`);
        // Counted or a repeat, the gateway may count an id again only as the window allows.
        for (const id of fresh) this.model.counted(id, clock);
        for (const id of fresh) this.model.store(id, clock);
        break;
      }
      case 'bulk':
      case 'csv': {
        const items = op.items.map((i) => ({ eventId: i.id === 'gen' ? `g${this.generated++}` : `e${i.id}`, valid: i.valid }));
        const res = op.kind === 'bulk' ? await this.bulk(items) : await this.csv(items);
        if (res.statusCode === 402) {
          if (bound + op.items.length <= this.model.limit) this.fail(`job of ${op.items.length} refused while the model allows ${bound}`);
          break;
        }
        if (res.statusCode !== 202) this.fail(`job answered ${res.statusCode}: ${res.body}`);
        const jobId = res.json<{ jobId: string }>().jobId;
        const acceptedIds = new Set(items.filter((i) => i.valid).map((i) => i.eventId));
        this.jobs.push({ jobId, receivedAtMs: clock, acceptedIds });
        this.model.jobAccepted(acceptedIds, clock);
        this.model.pending.set(jobId, { period, reserved: op.items.length });
        break;
      }
      case 'runJobs':
        await this.runJobs();
        break;
      case 'advance':
        clock += op.ms;
        break;
      case 'reconcile': {
        const result = await reconciler.runOnce();
        if ('fromHour' in result) this.model.reconciled(allowancePeriod(clock).id, result.fromHour);
        break;
      }
      default:
        break;
    }
    const used = await this.used();
    const now = allowancePeriod(clock).id;
    if (used < this.model.lowerBound(now)) this.fail(`used ${used} below the model's ${this.model.lowerBound(now)}`);
    if (used > this.model.upperBound(now)) this.fail(`used ${used} above the documented window's ${this.model.upperBound(now)}`);
  }

  private bulk(items: { eventId: string; valid: boolean }[]) {
    const events = items.map((i) => ({ eventName: 'Used', eventId: i.eventId, ...(i.valid ? { email: 'a@b.io' } : {}) }));
    return gw.app.inject({ method: 'POST', url: '/v1/events/bulk', headers: this.headers(), payload: { events }, remoteAddress: randomClientIp() });
  }

  private csv(items: { eventId: string; valid: boolean }[]) {
    const rows = items.map((i) => `Used,2026-01-01T00:00:00Z,${i.valid ? 'a@b.io' : ''},${i.eventId}`);
    const boundary = `----m${uniqueSuffix()}`;
    const payload = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="e.csv"\r\nContent-Type: text/csv\r\n\r\nevent_name,timestamp,email,event_id\n${rows.join('\n')}\n\r\n--${boundary}--\r\n`,
    );
    return gw.app.inject({
      method: 'POST',
      url: '/v1/backfill/csv',
      headers: { ...this.headers(false), 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload,
      remoteAddress: randomClientIp(),
    });
  }

  /** Waits for every job to complete; its accepted events are stored with the job's receipt time. */
  async runJobs(): Promise<void> {
    for (const { jobId, acceptedIds, receivedAtMs } of this.jobs) {
      const status = await waitFor(
        async () => {
          const res = await gw.app.inject({ method: 'GET', url: `/v1/jobs/${jobId}`, headers: this.headers(false), remoteAddress: randomClientIp() });
          const s = res.json<JobStatus>();
          if (s.status !== 'completed') throw new Error(`job ${jobId} is ${s.status}`);
          return s;
        },
        { description: `job ${jobId} completed`, timeoutMs: 60_000 },
      );
      if (status.accepted !== acceptedIds.size) this.fail(`job ${jobId} accepted ${status.accepted}, expected ${acceptedIds.size}`);
      for (const id of acceptedIds) this.model.store(id, receivedAtMs, true);
      this.model.jobSeenCompleted(acceptedIds, receivedAtMs);
      this.model.settled(jobId, status.accepted, clock);
    }
    this.jobs.length = 0;
  }

  async settle(): Promise<void> {
    this.log.push('settle');
    await this.runJobs();
    clock = (Math.floor(clock / HOUR) + 1) * HOUR + 31_000;
    await reconciler.runOnce();
    const period = allowancePeriod(clock);
    const [row] = await gw.clickhouse.ch.query<{ n: string }>(
      `SELECT uniqExact(event_id) AS n FROM events WHERE account_id = '${this.accountId}' AND received_at_ms >= ${period.start.getTime()} AND received_at_ms < ${period.end.getTime()}`,
    );
    const used = await this.used();
    const stored = Number(row?.n);
    // Exact: the counter is ClickHouse's count. The model knows it but for ids whose first store
    // was a job the pipeline may have run before an API request with them (storedRange).
    const model = this.model.storedRange(period.id);
    if (used !== stored || stored < model.low || stored > model.high) {
      this.fail(`after settlement used ${used}, ClickHouse ${stored}, the model ${model.low === model.high ? model.low : `${model.low} to ${model.high}`}`);
    }
    if (stored > this.model.limit) this.fail(`${stored} events stored on a limit of ${this.model.limit}`);
  }
}

const runs = Number(process.env.METERING_MODEL_E2E_RUNS ?? 20);
let sequences = 0;

describe('allowance model (end to end)', () => {
  it(`holds for ${runs} random sequences over HTTP`, { timeout: 900_000 }, async () => {
    const op = opArbitrary(1, { api: 100, job: 300 }).filter((o) => o.kind !== 'apiFails' && o.kind !== 'restart');
    await fc.assert(
      fc.asyncProperty(startArbitrary, fc.array(op, { minLength: 1, maxLength: 8 }), async (start, ops) => {
        // The same time before a month's end, a month after the last sequence's: the clock
        // shared by the gateway and the processor never goes back.
        sequences += 1;
        clock = Date.UTC(2026, 1 + sequences, 1) - (Date.UTC(2026, 1, 1) - start);
        const { account, apiKey } = await gw.newAccount('free');
        const sequence = new HttpSequence(account.id, apiKey);
        for (const o of ops) await sequence.apply(o);
        await sequence.settle();
      }),
      {
        numRuns: runs,
        endOnFailure: process.env.METERING_MODEL_E2E_SHRINK !== '1',
        ...(process.env.METERING_MODEL_E2E_SEED ? { seed: Number(process.env.METERING_MODEL_E2E_SEED) } : {}),
      },
    );
  });
});

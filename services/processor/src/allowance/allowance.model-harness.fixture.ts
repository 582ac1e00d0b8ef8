import { type Account, type Allowance, createAllowance, createAllowanceReconciler, type EventDecision, allowancePeriod } from '@ingest/domain';
import { createMetricsRegistry, type Redis } from '@ingest/platform';
import { TEST_SEEN_IDS_KEY, testLogger } from '@ingest/testkit';
import { AccountModel, type IdSpec, type JobItem, type Op } from './allowance.model.fixture.js';
import { createAllowanceReconcileTask } from './reconcile.task.js';

const SEEN_KEY = Buffer.from(TEST_SEEN_IDS_KEY);

const HOUR = 3_600_000;

interface QueuedJob {
  jobId: string;
  account: number;
  items: { eventId: string; valid: boolean }[];
  receivedAtMs: number;
}

/**
 * Runs operation sequences against the real allowance and allowance reconciler (real Redis), with a
 * simulated clock and a simulated pipeline: what the gateway accepts is stored at once (an
 * eventId once, with its first received_at), a job's accepted events when the job runs, and
 * "ClickHouse" counts what is stored. After every operation it holds the counters to the model
 * (allowance.model.fixture.ts); a violation throws with what was seen.
 */
export class AllowanceModelHarness {
  clock: number;
  private allowance!: Allowance;
  private reconciler!: ReturnType<typeof createAllowanceReconcileTask>;
  private readonly models: AccountModel[];
  private queue: QueuedJob[] = [];
  private readonly finished: { account: number; jobId: string; receivedAtMs: number; accepted: number }[] = [];
  private generated = 0;
  private jobs = 0;
  readonly log: string[] = [];

  constructor(
    private readonly redis: Redis,
    private readonly keyPrefix: string,
    readonly accounts: Account[],
    limits: number[],
    startMs: number,
  ) {
    this.clock = startMs;
    this.models = limits.map((limit) => new AccountModel(limit));
    this.build();
  }

  /** New instances, as after a restart: nothing is kept in memory between operations anyway. */
  private build(): void {
    const now = () => this.clock;
    // The same key after every restart, as the replicas of a deployment share SEEN_IDS_HMAC_KEY.
    this.allowance = createAllowance({ redis: this.redis, keyPrefix: this.keyPrefix, now, seenIdsKey: SEEN_KEY });
    this.reconciler = createAllowanceReconcileTask({
      counts: {
        exactByAccount: async (fromMs, toMs) => new Map(this.accounts.map((a, i) => [a.id, this.models[i]?.storedIn(fromMs, toMs) ?? 0])),
      },
      allowance: createAllowanceReconciler(this.redis, this.keyPrefix),
      pipelineCaughtUp: async () => true,
      logger: testLogger(),
      metrics: createMetricsRegistry('allowance-model'),
      intervalMs: 60_000,
      now,
    });
  }

  private eventId(spec: IdSpec): string {
    return spec === 'gen' ? `gen-${this.generated++}` : `e${spec}`;
  }

  private fail(message: string): never {
    throw new Error(`${message}\n  at clock ${new Date(this.clock).toISOString()}; ops so far:\n    ${this.log.join('\n    ')}`);
  }

  async apply(op: Op): Promise<void> {
    this.log.push(JSON.stringify(op));
    switch (op.kind) {
      case 'api':
      case 'apiFails':
        await this.request(op.account, op.ids, op.kind === 'apiFails');
        break;
      case 'bulk':
        await this.job(op.account, op.items, op.items.length);
        break;
      case 'csv':
        await this.job(op.account, op.items, op.chunk);
        break;
      case 'runJobs':
        await this.runJobs();
        break;
      case 'advance':
        this.clock += op.ms;
        break;
      case 'reconcile':
        await this.reconcile();
        break;
      case 'restart':
        for (const job of this.finished) {
          await this.allowance.settleJob({
            accountId: this.accounts[job.account]?.id ?? '',
            jobId: job.jobId,
            receivedAtMs: job.receivedAtMs,
            accepted: job.accepted,
          });
        }
        this.build();
        break;
    }
    await this.checkBounds();
  }

  private async request(index: number, specs: IdSpec[], writeFails: boolean): Promise<void> {
    const account = this.accounts[index] as Account;
    const model = this.models[index] as AccountModel;
    const period = allowancePeriod(this.clock).id;
    const ids = specs.map((s) => ({ eventId: this.eventId(s), generated: s === 'gen' }));
    const bound = model.upperBound(period);
    const { decisions } = await this.allowance.reserveEvents(
      account,
      ids.map((i) => (i.generated ? '' : i.eventId)),
      this.clock,
    );
    let countedHere = 0;
    const seenHere = new Set<string>();
    decisions.forEach((decision: EventDecision, k) => {
      const { eventId } = ids[k] as { eventId: string };
      if (decision === 'over') {
        if (bound + countedHere < model.limit) this.fail(`${eventId} refused while the model allows at most ${bound + countedHere} of ${model.limit}`);
      } else if (decision === 'repeat') {
        if (!seenHere.has(eventId) && !model.mayBeRepeat(eventId)) this.fail(`${eventId} called a repeat but never counted`);
      } else {
        if (seenHere.has(eventId) || model.mustBeRepeat(eventId, this.clock)) this.fail(`${eventId} counted again within the gateway's memory`);
        countedHere++;
        model.counted(eventId, this.clock);
      }
      if (decision !== 'over') seenHere.add(eventId);
    });
    const accepted = ids.filter((_, k) => decisions[k] !== 'over');
    if (writeFails) {
      const countedIds = ids.filter((_, k) => decisions[k] === 'counted');
      await this.allowance.releaseEvents(
        account,
        countedIds.map((i) => (i.generated ? '' : i.eventId)),
        this.clock,
      );
      for (const i of countedIds) model.released(i.eventId);
      return;
    }
    for (const i of accepted) model.store(i.eventId, this.clock);
  }

  /** Bulk (one reservation) or CSV (one per chunk, all or nothing). */
  private async job(index: number, items: JobItem[], chunk: number): Promise<void> {
    const account = this.accounts[index] as Account;
    const model = this.models[index] as AccountModel;
    const jobId = `job-${this.jobs++}`;
    const period = allowancePeriod(this.clock).id;
    const receivedAtMs = this.clock;
    let reserved = 0;
    for (let at = 0; at < items.length; at += chunk) {
      const size = Math.min(chunk, items.length - at);
      const bound = model.upperBound(period) + reserved;
      const { granted } = await this.allowance.reserveJob(account, jobId, size, receivedAtMs);
      if (!granted) {
        if (bound + size <= model.limit) this.fail(`job ${jobId} refused at ${at} while the model allows ${bound} + ${size} of ${model.limit}`);
        await this.allowance.settleJob({ accountId: account.id, jobId, receivedAtMs, accepted: 0 });
        model.pending.delete(jobId);
        return;
      }
      reserved += size;
      model.pending.set(jobId, { period, reserved });
    }
    this.queue.push({ jobId, account: index, receivedAtMs, items: items.map((i) => ({ eventId: this.eventId(i.id), valid: i.valid })) });
  }

  private async runJobs(): Promise<void> {
    for (const job of this.queue) {
      const model = this.models[job.account] as AccountModel;
      const accepted = new Set<string>();
      for (const item of job.items) if (item.valid) accepted.add(item.eventId);
      for (const id of accepted) model.store(id, job.receivedAtMs);
      const settled = { accountId: this.accounts[job.account]?.id ?? '', jobId: job.jobId, receivedAtMs: job.receivedAtMs, accepted: accepted.size };
      await this.allowance.settleJob(settled);
      model.settled(job.jobId, accepted.size, this.clock);
      this.finished.push({ account: job.account, jobId: job.jobId, receivedAtMs: job.receivedAtMs, accepted: accepted.size });
    }
    this.queue = [];
  }

  private async reconcile(): Promise<void> {
    const result = await this.reconciler.runOnce();
    if ('fromHour' in result) for (const model of this.models) model.reconciled(allowancePeriod(this.clock).id, result.fromHour);
  }

  /** Between settlements: model ≤ used ≤ model + the documented window; remaining ≥ 0. */
  private async checkBounds(): Promise<void> {
    const period = allowancePeriod(this.clock).id;
    for (const [i, account] of this.accounts.entries()) {
      const model = this.models[i] as AccountModel;
      const state = await this.allowance.state(account);
      const low = model.usedInModel(period);
      const high = model.upperBound(period);
      if (state.remaining < 0) this.fail(`account ${i}: remaining ${state.remaining}`);
      if (state.used < low) this.fail(`account ${i}: used ${state.used} below the model's ${low}`);
      if (state.used > high) this.fail(`account ${i}: used ${state.used} above the documented window's ${high}`);
    }
  }

  /**
   * Every job run, the hour over, the reconciler run: `used` is exactly the model's count of
   * distinct events first stored in the month, and within the limit.
   */
  async settle(): Promise<void> {
    this.log.push('settle');
    await this.runJobs();
    this.clock = (Math.floor(this.clock / HOUR) + 1) * HOUR + 31_000;
    await this.reconcile();
    const period = allowancePeriod(this.clock).id;
    for (const [i, account] of this.accounts.entries()) {
      const model = this.models[i] as AccountModel;
      const state = await this.allowance.state(account);
      const exact = model.usedInModel(period);
      if (state.used !== exact) this.fail(`account ${i}: after settlement used ${state.used}, the model says ${exact}`);
      if (exact > model.limit) this.fail(`account ${i}: ${exact} events stored on a limit of ${model.limit}`);
    }
  }
}

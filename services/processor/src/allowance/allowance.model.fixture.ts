import { hourOf, allowancePeriod } from '@ingest/domain';
import fc from 'fast-check';

/**
 * The model of the allowance that the model-based tests hold the real allowance to (documented in
 * docs/billing.md): an account is charged for the distinct eventIds first stored in the month.
 *
 * - After settlement (every job run, the hour over, the reconciler run): `used` equals that
 *   number exactly, and never exceeds the plan's limit. End to end, where the processor runs
 *   jobs unseen, an id sent in a job and later through the API may have been stored first by
 *   either: that number is then known within a range (storedRange), `used` still equals
 *   ClickHouse's count exactly.
 * - Before: `used` is never below it, and exceeds it only within the documented window:
 *   reservations of jobs that have not run, a repeat counted again after the gateway's memory of
 *   it (at least 5 minutes) has passed, and a job's accepted events (counted in the hour the job
 *   finished) until that hour is reconciled.
 * - A refusal (402, quota_exceeded) happens only when the model, allowing for that window, says
 *   the limit is reached.
 */

export const MEMORY_MS = 5 * 60_000;
const HOUR = 3_600_000;

/** An event id of a small per-account pool (so repeats happen), or one the service generates. */
export type IdSpec = number | 'gen';
export interface JobItem {
  id: IdSpec;
  valid: boolean;
}

export type Op =
  | { kind: 'api'; account: number; ids: IdSpec[] }
  /** A request whose write to Kafka fails: its charge is given back, nothing is stored. */
  | { kind: 'apiFails'; account: number; ids: IdSpec[] }
  | { kind: 'bulk'; account: number; items: JobItem[] }
  | { kind: 'csv'; account: number; items: JobItem[]; chunk: number }
  | { kind: 'runJobs' }
  | { kind: 'advance'; ms: number }
  | { kind: 'reconcile' }
  /** The processor restarts: finished jobs are settled again (at least once), new instances. */
  | { kind: 'restart' };

const idSpec = fc.oneof({ weight: 4, arbitrary: fc.nat(59) }, { weight: 1, arbitrary: fc.constant<'gen'>('gen') });
const valid = fc.oneof({ weight: 4, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) });
const jobItems = (max: number) => fc.array(fc.record({ id: idSpec, valid }), { minLength: 1, maxLength: max });

export function opArbitrary(accounts: number, sizes: { api: number; job: number }): fc.Arbitrary<Op> {
  const account = fc.nat(accounts - 1);
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('api' as const), account, ids: fc.array(idSpec, { minLength: 1, maxLength: sizes.api }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('apiFails' as const), account, ids: fc.array(idSpec, { minLength: 1, maxLength: 10 }) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('bulk' as const), account, items: jobItems(sizes.job) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('csv' as const), account, items: jobItems(sizes.job), chunk: fc.integer({ min: 1, max: 50 }) }) },
    { weight: 2, arbitrary: fc.constant({ kind: 'runJobs' as const }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('advance' as const),
        ms: fc.oneof(
          { weight: 3, arbitrary: fc.integer({ min: 1_000, max: 2 * 60_000 }) },
          { weight: 2, arbitrary: fc.integer({ min: 2 * 60_000, max: 10 * 60_000 }) },
          { weight: 1, arbitrary: fc.integer({ min: HOUR / 2, max: 3 * HOUR }) },
        ),
      }),
    },
    { weight: 2, arbitrary: fc.constant({ kind: 'reconcile' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
  );
}

/**
 * Start times shortly before a quarter hour (where the gateway's memory of ids rolls over), up
 * to 3 hours before a month's end, so sequences cross all three.
 */
export const startArbitrary = fc
  .tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 120 }))
  .map(([quarters, seconds]) => Date.UTC(2026, 1, 1) - quarters * 15 * 60_000 - seconds * 1_000);

interface Overcount {
  hour: number;
  n: number;
}

/** What the model knows of one account. */
export class AccountModel {
  /** eventId -> its received_at when first stored (what ClickHouse counts it by). */
  private readonly stored = new Map<string, number>();
  /** eventId -> when the gateway last counted it (not given back). */
  private readonly countedAt = new Map<string, number>();
  /** Reservations of jobs not run yet, by job. */
  readonly pending = new Map<string, { period: string; reserved: number }>();
  private overcounts: (Overcount & { period: string })[] = [];
  /** jobsRunUnobserved: ids of jobs not yet seen completed -> those jobs' receipts (they may be stored already). */
  private readonly unseenJobIds = new Map<string, number[]>();
  /**
   * jobsRunUnobserved: ids the model stored at one time that may have been first stored at
   * another: sent through the API while a job received earlier that holds them had not been
   * seen to complete, or held by two jobs not seen to complete (the processor runs jobs in
   * either order). Whichever the pipeline stored first is the one charged.
   */
  private readonly otherFirstStore = new Map<string, Set<number>>();

  /**
   * `jobsRunUnobserved`: the processor runs jobs on its own (end to end), so a job the model
   * still holds pending may already have run. Its accepted events are then counted by ClickHouse
   * (under the hour of receipt) and by the gateway (under the hour it finished) until that hour is
   * reconciled: up to twice its reservation, where a job run only when the model says counts once.
   */
  constructor(
    readonly limit: number,
    private readonly options: { jobsRunUnobserved?: boolean } = {},
  ) {}

  /** Distinct eventIds first stored in the month: what the account is charged once settled. */
  usedInModel(period: string): number {
    let n = 0;
    for (const at of this.stored.values()) if (allowancePeriod(at).id === period) n++;
    return n;
  }

  /** What ClickHouse counts for [fromMs, toMs): ids first stored with received_at in it. */
  storedIn(fromMs: number, toMs: number): number {
    let n = 0;
    for (const at of this.stored.values()) if (at >= fromMs && at < toMs) n++;
    return n;
  }

  /**
   * The least and the most ClickHouse may count for the period once everything is stored: the
   * model's count, give or take the ids whose first store is one of two times (otherFirstStore).
   */
  storedRange(period: string): { low: number; high: number } {
    const n = this.usedInModel(period);
    let down = 0;
    let up = 0;
    for (const [id, others] of this.otherFirstStore) {
      const at = this.stored.get(id);
      if (at === undefined) continue;
      const chosen = allowancePeriod(at).id;
      const alternatives = [...others].map((t) => allowancePeriod(t).id);
      if (chosen === period && alternatives.some((p) => p !== period)) down++;
      else if (chosen !== period && alternatives.includes(period)) up++;
    }
    return { low: n - down, high: n + up };
  }

  /** The least the counter may say now: what is stored for sure. */
  lowerBound(period: string): number {
    return this.storedRange(period).low;
  }

  /** The most the counter may say now, by the documented window. */
  upperBound(period: string): number {
    let pending = 0;
    const perJob = this.options.jobsRunUnobserved ? 2 : 1;
    for (const job of this.pending.values()) if (job.period === period) pending += perJob * job.reserved;
    const over = this.overcounts.filter((o) => o.period === period).reduce((sum, o) => sum + o.n, 0);
    return this.storedRange(period).high + pending + over;
  }

  /** jobsRunUnobserved: a job was accepted with these (valid) ids, received at `receivedAtMs`. */
  jobAccepted(eventIds: Iterable<string>, receivedAtMs: number): void {
    if (!this.options.jobsRunUnobserved) return;
    for (const id of eventIds) this.unseenJobIds.set(id, [...(this.unseenJobIds.get(id) ?? []), receivedAtMs]);
  }

  /** jobsRunUnobserved: the job received at `receivedAtMs` was seen completed (the model stored its ids first). */
  jobSeenCompleted(eventIds: Iterable<string>, receivedAtMs: number): void {
    for (const id of eventIds) {
      const times = this.unseenJobIds.get(id) ?? [];
      times.splice(times.indexOf(receivedAtMs), 1);
      if (times.length === 0) this.unseenJobIds.delete(id);
    }
  }

  /** A retry within the gateway's guaranteed memory must be free. */
  mustBeRepeat(eventId: string, atMs: number): boolean {
    const at = this.countedAt.get(eventId);
    return at !== undefined && atMs - at < MEMORY_MS;
  }

  /** The gateway may call an id a repeat only if it counted it before (and did not give it back). */
  mayBeRepeat(eventId: string): boolean {
    return this.countedAt.has(eventId);
  }

  /** The gateway counted this id (decision `counted`). */
  counted(eventId: string, atMs: number): void {
    if (this.stored.has(eventId)) this.overcounts.push({ period: allowancePeriod(atMs).id, hour: hourOf(atMs), n: 1 });
    this.countedAt.set(eventId, atMs);
  }

  released(eventId: string): void {
    this.countedAt.delete(eventId);
  }

  /** `fromJob`: stored by a job the model saw complete (its other unseen jobs may have run first). */
  store(eventId: string, receivedAtMs: number, fromJob = false): void {
    if (this.stored.has(eventId)) return;
    this.stored.set(eventId, receivedAtMs);
    // Another job with this id, not seen completed, may have stored it first: for an API request
    // one received before it (a later job's events reach dedupe after the request's), for a job
    // any other (the processor runs jobs in either order).
    const others = (this.unseenJobIds.get(eventId) ?? []).filter((t) => (fromJob ? t !== receivedAtMs : t < receivedAtMs));
    if (others.length > 0) this.otherFirstStore.set(eventId, new Set(others));
  }

  /** A job ran: its accepted events may be counted twice until the hour it settled in is reconciled. */
  settled(jobId: string, accepted: number, atMs: number): void {
    const job = this.pending.get(jobId);
    this.pending.delete(jobId);
    if (job && accepted > 0) this.overcounts.push({ period: job.period, hour: hourOf(atMs), n: accepted });
  }

  reconciled(period: string, fromHour: number): void {
    this.overcounts = this.overcounts.filter((o) => o.period !== period || o.hour >= fromHour);
  }
}

import { type Account, PLAN_LIMITS } from '../control-plane/types.js';
import { AppError } from '@ingest/platform';
import type { UsageResponse } from '@ingest/schemas';
import type { Redis, RedisArg } from '@ingest/platform';
import { redisScript } from '@ingest/platform';
import { hourOf, jobField, allowanceKeys, seenKeys } from './allowance.keys.js';
import { RELEASE_EVENTS, RESERVE_EVENTS, RESERVE_JOB, SETTLE_JOB } from './allowance.scripts.js';
import { type AllowancePeriod, allowancePeriod } from './allowance.period.js';
import { seenBucket, seenMember, seenShards } from './seen-ids.js';

/**
 * The monthly allowance, exact across gateway replicas: one Redis counter per account and UTC
 * month, changed only by Lua scripts (atomic in Redis). Usage counts unique events, so an id
 * counted in the last minutes is not counted again: a retried request costs nothing (see
 * seen-ids.ts for how long and in how little memory ids are remembered).
 *
 * What is counted is also recorded per hour of receipt, and bulk/CSV reservations per job until
 * the job has run. The processor's exact count of unique events (ClickHouse) reconciles the
 * counter: once everything received before an hour T is stored, counter = exact count before T
 * + what was counted from T on (see the allowance reconciler). That removes what the gateway could
 * not know: repeats older than its memory, and repeats across jobs and requests.
 */
export interface AllowanceState {
  limit: number;
  used: number;
  remaining: number;
  period: AllowancePeriod;
}

/** The allowance as callers read it (GET /v1/usage, and the dashboard's Usage page around it). */
export function usageReport(plan: string, state: AllowanceState): UsageResponse {
  return {
    plan,
    limit: state.limit,
    used: state.used,
    remaining: state.remaining,
    periodStart: state.period.start.toISOString(),
    periodEnd: state.period.end.toISOString(),
  };
}

/** Per event id, in the order given. */
export type EventDecision = 'counted' | 'repeat' | 'over';

/** A bulk or CSV job once it has run: what it accepted is what it costs. */
export interface SettledJob {
  accountId: string;
  jobId: string;
  /** The job's time of receipt (its events' received_at): the period its reservation is in. */
  receivedAtMs: number;
  /** Events the job wrote (valid, first of their id in the job); 0 for a job that failed or never ran. */
  accepted: number;
}

export interface Allowance {
  state(account: Account): Promise<AllowanceState>;
  /** What the counters say of a period: used (the counter) and events refused for the allowance. */
  periodCounts(accountId: string, periodId: string): Promise<{ used: number; refused: number }>;
  /**
   * Counts each new id while the allowance lasts; repeats are free; the rest are `over`. Pass
   * '' for an id the service generated: it cannot repeat, so it is counted without being
   * remembered (the memory of ids is for callers' retries).
   */
  reserveEvents(account: Account, eventIds: string[], atMs?: number): Promise<ReservationResult>;
  /**
   * `reserveEvents` as a script call not yet made, for a caller that runs it inside a script of
   * its own in the same round trip (the gateway: its per-account limits first, the reservation
   * only if they admit the request). Errors of that call are the caller's to report.
   */
  prepareReserveEvents(account: Account, eventIds: string[], atMs: number): PreparedReservation;
  /** Gives back what `reserveEvents` counted (the `counted` ids, '' for generated ones) when the write failed. */
  releaseEvents(account: Account, countedIds: string[], atMs: number): Promise<void>;
  /**
   * Adds `count` to a job's reservation, all or nothing. The reservation stays pending under the
   * job's id until `settleJob`, in the period of the job's time of receipt.
   */
  reserveJob(account: Account, jobId: string, count: number, jobAtMs: number): Promise<{ granted: boolean; state: AllowanceState }>;
  /**
   * The job has run (or never will, `accepted` 0): its reservation becomes what it accepted,
   * counted in the current hour (see SETTLE_JOB), and the rest is given back. Idempotent by
   * jobId, so "at least once" is fine.
   */
  settleJob(job: SettledJob): Promise<void>;
}

export type ReservationResult = { decisions: EventDecision[]; state: AllowanceState };

/** A reservation as the keys and arguments of RESERVE_EVENTS, and how to read its answer. */
export interface PreparedReservation {
  keys: string[];
  args: RedisArg[];
  decode(result: number[]): ReservationResult;
}

/** The reservation script, for a caller composing it with its own (prepareReserveEvents gives its keys and arguments). */
export { RESERVE_EVENTS } from './allowance.scripts.js';

export interface AllowanceDeps {
  redis: Redis;
  now?: () => number;
  /** Namespace of the Redis keys (REDIS_KEY_PREFIX); lets environments and tests share a server. */
  keyPrefix?: string;
  /**
   * The seen-id memory's HMAC key (seenIdsKey of seen-ids.ts), the same on every replica that
   * counts events: instances with different keys do not see each other's ids (a restart with
   * another key forgets them all). Required, so that no builder gets a per-instance key by accident.
   */
  seenIdsKey: Buffer;
}

/** Counters outlive their month by far: the ledger closes a period from ClickHouse, not from them. */
export const COUNTER_TTL_S = 40 * 24 * 3600;

const reserveEventsScript = redisScript(RESERVE_EVENTS, 'allowance_reserve_events');
const releaseEventsScript = redisScript(RELEASE_EVENTS, 'allowance_release_events');
const reserveJobScript = redisScript(RESERVE_JOB, 'allowance_reserve_job');
const settleJobScript = redisScript(SETTLE_JOB, 'allowance_settle_job');

export function createAllowance(deps: AllowanceDeps): Allowance {
  const { redis } = deps;
  const prefix = deps.keyPrefix ?? '';
  const now = deps.now ?? Date.now;
  const seenKey = deps.seenIdsKey;

  function toState(account: Account, used: number, period: AllowancePeriod): AllowanceState {
    const limit = PLAN_LIMITS[account.plan];
    return { limit, used, remaining: Math.max(0, limit - used), period };
  }

  /** Where ids counted at `atMs` are remembered: the buckets' shard prefixes and one member per id. */
  function seenArgs(account: Account, eventIds: string[], atMs: number) {
    const shards = seenShards(PLAN_LIMITS[account.plan]);
    const { bucket, checkPrevious } = seenBucket(atMs);
    const { registry, shardPrefix } = seenKeys(account.id, prefix);
    return {
      registry,
      shards,
      bucket,
      current: `${shardPrefix}${bucket}:`,
      previous: checkPrevious ? `${shardPrefix}${bucket - 1}:` : '',
      members: eventIds.map((id) => (id === '' ? '' : seenMember(seenKey, id, shards))),
    };
  }

  function prepare(account: Account, eventIds: string[], atMs: number): PreparedReservation {
    const period = allowancePeriod(atMs);
    const k = allowanceKeys(account.id, period.id, prefix);
    const seen = seenArgs(account, eventIds, atMs);
    return {
      keys: [k.counter, k.hours, k.refused, seen.registry],
      args: [PLAN_LIMITS[account.plan], COUNTER_TTL_S, hourOf(atMs), seen.current, seen.previous, seen.bucket, seen.shards, ...seen.members],
      decode: (result) => {
        const [used = 0, ...codes] = result;
        const decisions = codes.map((c): EventDecision => (c === 0 ? 'counted' : c === 1 ? 'repeat' : 'over'));
        return { decisions, state: toState(account, used, period) };
      },
    };
  }

  async function guarded<T>(action: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw new AppError('allowance_unavailable', `allowance ${action} failed: ${(err as Error).message}`, { retryable: true, cause: err });
    }
  }

  return {
    state: (account) =>
      guarded('read', async () => {
        const period = allowancePeriod(now());
        return toState(account, Number((await redis.get(allowanceKeys(account.id, period.id, prefix).counter)) ?? 0), period);
      }),

    periodCounts: (accountId, periodId) =>
      guarded('read', async () => {
        const k = allowanceKeys(accountId, periodId, prefix);
        const [used, refused] = await redis.mget(k.counter, k.refused);
        return { used: Number(used ?? 0), refused: Number(refused ?? 0) };
      }),

    reserveEvents: (account, eventIds, atMs = now()) =>
      guarded('reserve', async () => {
        const call = prepare(account, eventIds, atMs);
        return call.decode((await reserveEventsScript(redis, call.keys, call.args)) as number[]);
      }),

    prepareReserveEvents: (account, eventIds, atMs) => prepare(account, eventIds, atMs),

    releaseEvents: (account, countedIds, atMs) =>
      guarded('release', async () => {
        const k = allowanceKeys(account.id, allowancePeriod(atMs).id, prefix);
        const chosen = countedIds.filter((id) => id !== '');
        const seen = seenArgs(account, chosen, atMs);
        await releaseEventsScript(redis, [k.counter, k.hours], [hourOf(atMs), countedIds.length - chosen.length, seen.current, ...seen.members]);
      }),

    reserveJob: (account, jobId, count, jobAtMs) =>
      guarded('reserve', async () => {
        const period = allowancePeriod(jobAtMs);
        const k = allowanceKeys(account.id, period.id, prefix);
        const [granted = 0, used = 0] = (await reserveJobScript(
          redis,
          [k.counter, k.hours, k.refused],
          [PLAN_LIMITS[account.plan], count, COUNTER_TTL_S, jobField(jobId)],
        )) as number[];
        return { granted: granted === 1, state: toState(account, used, period) };
      }),

    settleJob: (job) =>
      guarded('settle', async () => {
        const k = allowanceKeys(job.accountId, allowancePeriod(job.receivedAtMs).id, prefix);
        await settleJobScript(redis, [k.counter, k.hours], [jobField(job.jobId), hourOf(now()), job.accepted]);
      }),
  };
}

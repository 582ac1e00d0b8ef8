import { type Account, PLAN_LIMITS } from '../control-plane/types.js';
import { AppError } from '../errors.js';
import type { Redis } from '../redis.js';
import { type QuotaPeriod, quotaPeriod } from './quota-period.js';

/**
 * The monthly allowance, exact across gateway replicas: one Redis counter per account and UTC
 * month, changed only by Lua scripts (atomic in Redis). Usage counts unique events, so ids
 * seen in the last 5-10 minutes (two rotating sets) are not counted again: a retried request
 * costs nothing.
 *
 * Only ids the caller chose are remembered (generated ids cannot repeat).
 *
 * What is counted is also recorded per hour of receipt. The processor's exact count of unique
 * events (ClickHouse) reconciles the counter: once everything received before an hour T is
 * stored, counter = exact count before T + what was counted from T on (see `reconcile`).
 * That removes what the gateway could not know: repeats older than the seen sets, and bulk or
 * CSV events that the job later rejected.
 */
export interface QuotaState {
  limit: number;
  used: number;
  remaining: number;
  period: QuotaPeriod;
}

/** Per event id, in the order given. */
export type EventDecision = 'counted' | 'repeat' | 'over';

export interface Allowance {
  state(account: Account): Promise<QuotaState>;
  /**
   * Counts each new id while the allowance lasts; repeats are free; the rest are `over`. Pass
   * '' for an id the service generated: it cannot repeat, so it is counted without being
   * remembered (the memory of ids is for callers' retries).
   */
  reserveEvents(account: Account, eventIds: string[]): Promise<{ decisions: EventDecision[]; state: QuotaState }>;
  /**
   * All or nothing, for bulk and CSV jobs. The reservation stays pending under the job's id
   * (not an hour) until `settleJob`, because the job's events reach ClickHouse only once the
   * job has run.
   */
  reserveCount(account: Account, count: number, jobId: string): Promise<{ granted: boolean; state: QuotaState }>;
  /** The job has run: its events are on their way to ClickHouse, which counts them from now on. Idempotent. */
  settleJob(accountId: string, jobId: string, createdAtMs: number): Promise<void>;
  /** Gives back what a failed write had reserved. */
  release(account: Account, release: { eventIds?: string[]; count?: number; jobId?: string }): Promise<void>;
}

/** Used by the reconciler, which knows accounts only by id. */
export interface AllowanceReconciler {
  /** Accounts with a counter in the period `YYYYMM`. */
  accountsWithCounters(periodId: string): Promise<string[]>;
  /** counter := exact + counted in hours >= fromHour; forgets older hours. Returns the new value. */
  reconcile(accountId: string, periodId: string, exact: number, fromHour: number): Promise<number>;
}

function jobField(jobId: string): string {
  return `job:${jobId}`;
}

export function hourOf(ms: number): number {
  return Math.floor(ms / 3_600_000);
}

// Ids are remembered for 5 to 10 minutes (two rotating sets): long enough for a client's
// retries; older repeats are corrected by the reconciler.
const SEEN_BUCKET_MS = 5 * 60 * 1000;
const COUNTER_TTL_S = 40 * 24 * 3600;
const SEEN_TTL_S = 12 * 60;

// KEYS: counter, seen (current bucket), seen (previous bucket), counted per hour
// ARGV: limit, counter ttl, seen ttl, hour, ids...
// Returns {used, decisions...} with 0 = counted, 1 = repeat, 2 = over.
const RESERVE_EVENTS = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local before = used
local limit = tonumber(ARGV[1])
local out = {}
for i = 5, #ARGV do
  local id = ARGV[i]
  if id ~= '' and (redis.call('SISMEMBER', KEYS[2], id) == 1 or redis.call('SISMEMBER', KEYS[3], id) == 1) then
    out[#out + 1] = 1
  elseif used < limit then
    if id ~= '' then redis.call('SADD', KEYS[2], id) end
    used = used + 1
    out[#out + 1] = 0
  else
    out[#out + 1] = 2
  end
end
redis.call('SET', KEYS[1], used, 'EX', ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
if used > before then
  redis.call('HINCRBY', KEYS[4], ARGV[4], used - before)
  redis.call('EXPIRE', KEYS[4], ARGV[2])
end
table.insert(out, 1, used)
return out
`;

// KEYS: counter, counted per hour. ARGV: limit, count, counter ttl, field (job:<id>). Returns {granted (0/1), used}.
const RESERVE_COUNT = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local count = tonumber(ARGV[2])
if used + count > tonumber(ARGV[1]) then return {0, used} end
used = redis.call('INCRBY', KEYS[1], count)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('HINCRBY', KEYS[2], ARGV[4], count)
redis.call('EXPIRE', KEYS[2], ARGV[3])
return {1, used}
`;

// KEYS: counter, seen (current), seen (previous), counted per hour. ARGV: count, hour, ids...
const RELEASE = `
local removed = 0
for i = 3, #ARGV do
  removed = removed + redis.call('SREM', KEYS[2], ARGV[i]) + redis.call('SREM', KEYS[3], ARGV[i])
end
local total = removed + tonumber(ARGV[1])
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if total > used then total = used end
if total > 0 then
  redis.call('DECRBY', KEYS[1], total)
  redis.call('HINCRBY', KEYS[4], ARGV[2], -total)
end
return total
`;

// KEYS: counter, counted per hour. ARGV: exact count before fromHour, fromHour, counter ttl.
// Fields are hours (numbers) or pending jobs (job:<id>, always counted until settled).
const RECONCILE = `
local pending = 0
local fields = redis.call('HGETALL', KEYS[2])
for i = 1, #fields, 2 do
  local hour = tonumber(fields[i])
  if hour == nil or hour >= tonumber(ARGV[2]) then
    pending = pending + tonumber(fields[i + 1])
  else
    redis.call('HDEL', KEYS[2], fields[i])
  end
end
local used = tonumber(ARGV[1]) + pending
redis.call('SET', KEYS[1], used, 'EX', ARGV[3])
return used
`;

export interface AllowanceDeps {
  redis: Redis;
  now?: () => number;
  /** Namespace of the Redis keys (REDIS_KEY_PREFIX); lets environments and tests share a server. */
  keyPrefix?: string;
}

export function createAllowance(deps: AllowanceDeps): Allowance {
  const { redis } = deps;
  const prefix = deps.keyPrefix ?? '';
  const now = deps.now ?? Date.now;

  function keys(account: Account, atMs: number) {
    const period = quotaPeriod(atMs);
    const bucket = Math.floor(atMs / SEEN_BUCKET_MS);
    return {
      period,
      hour: hourOf(atMs),
      ...quotaKeys(account.id, period.id, prefix),
      seenCurrent: `${prefix}quota:{${account.id}}:seen:${bucket}`,
      seenPrevious: `${prefix}quota:{${account.id}}:seen:${bucket - 1}`,
    };
  }

  function toState(account: Account, used: number, period: QuotaPeriod): QuotaState {
    const limit = PLAN_LIMITS[account.plan];
    return { limit, used, remaining: Math.max(0, limit - used), period };
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
        const k = keys(account, now());
        return toState(account, Number((await redis.get(k.counter)) ?? 0), k.period);
      }),

    reserveEvents: (account, eventIds) =>
      guarded('reserve', async () => {
        const k = keys(account, now());
        const result = (await redis.eval(
          RESERVE_EVENTS,
          4,
          k.counter,
          k.seenCurrent,
          k.seenPrevious,
          k.hours,
          PLAN_LIMITS[account.plan],
          COUNTER_TTL_S,
          SEEN_TTL_S,
          k.hour,
          ...eventIds,
        )) as number[];
        const [used = 0, ...codes] = result;
        const decisions = codes.map((c): EventDecision => (c === 0 ? 'counted' : c === 1 ? 'repeat' : 'over'));
        return { decisions, state: toState(account, used, k.period) };
      }),

    reserveCount: (account, count, jobId) =>
      guarded('reserve', async () => {
        const k = keys(account, now());
        const [granted = 0, used = 0] = (await redis.eval(
          RESERVE_COUNT,
          2,
          k.counter,
          k.hours,
          PLAN_LIMITS[account.plan],
          count,
          COUNTER_TTL_S,
          jobField(jobId),
        )) as number[];
        return { granted: granted === 1, state: toState(account, used, k.period) };
      }),

    settleJob: (accountId, jobId, createdAtMs) =>
      guarded('settle', async () => {
        await redis.hdel(quotaKeys(accountId, quotaPeriod(createdAtMs).id, prefix).hours, jobField(jobId));
      }),

    release: (account, release) =>
      guarded('release', async () => {
        const k = keys(account, now());
        const field = release.jobId ? jobField(release.jobId) : k.hour;
        await redis.eval(RELEASE, 4, k.counter, k.seenCurrent, k.seenPrevious, k.hours, release.count ?? 0, field, ...(release.eventIds ?? []));
      }),
  };
}

/** Keys share the {accountId} hash tag so one script touches one Redis Cluster slot. */
export function quotaKeys(accountId: string, periodId: string, prefix = ''): { counter: string; hours: string } {
  return { counter: `${prefix}quota:{${accountId}}:${periodId}`, hours: `${prefix}quota:{${accountId}}:${periodId}:hours` };
}

export function createAllowanceReconciler(redis: Redis, keyPrefix = ''): AllowanceReconciler {
  return {
    async accountsWithCounters(periodId) {
      const accounts = new Set<string>();
      // SCAN patterns are globs: the prefix's own glob characters are escaped.
      const pattern = `${keyPrefix.replace(/[*?[\]\\]/g, '\\$&')}quota:{*}:${periodId}`;
      let cursor = '0';
      do {
        const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        for (const key of found) {
          const match = /^quota:\{(.+)\}:\d{6}$/.exec(key.slice(keyPrefix.length));
          if (match?.[1]) accounts.add(match[1]);
        }
      } while (cursor !== '0');
      return [...accounts];
    },
    async reconcile(accountId, periodId, exact, fromHour) {
      const k = quotaKeys(accountId, periodId, keyPrefix);
      return Number(await redis.eval(RECONCILE, 2, k.counter, k.hours, exact, fromHour, COUNTER_TTL_S));
    },
  };
}

import { type Account, AppError, PLAN_LIMITS, type Redis } from '@ingest/shared';
import { type QuotaPeriod, quotaPeriod } from './quota-period.js';

/**
 * The monthly allowance, exact across gateway replicas: one Redis counter per account and UTC
 * month, changed only by Lua scripts (atomic in Redis). Usage counts unique events, so ids
 * seen in the last 10-20 minutes (two rotating sets) are not counted again: a retried request
 * costs nothing. The processor's exact count of unique events reconciles the counter.
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
  /** Counts each new id while the allowance lasts; repeats are free; the rest are `over`. */
  reserveEvents(account: Account, eventIds: string[]): Promise<{ decisions: EventDecision[]; state: QuotaState }>;
  /** All or nothing, for bulk and CSV jobs. */
  reserveCount(account: Account, count: number): Promise<{ granted: boolean; state: QuotaState }>;
  /** Gives back what a failed write had reserved. */
  release(account: Account, release: { eventIds?: string[]; count?: number }): Promise<void>;
}

const SEEN_BUCKET_MS = 10 * 60 * 1000;
const COUNTER_TTL_S = 40 * 24 * 3600;
const SEEN_TTL_S = 25 * 60;

// KEYS: counter, seen (current bucket), seen (previous bucket)
// ARGV: limit, counter ttl, seen ttl, ids...
// Returns {used, decisions...} with 0 = counted, 1 = repeat, 2 = over.
const RESERVE_EVENTS = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local limit = tonumber(ARGV[1])
local out = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  if redis.call('SISMEMBER', KEYS[2], id) == 1 or redis.call('SISMEMBER', KEYS[3], id) == 1 then
    out[#out + 1] = 1
  elseif used < limit then
    redis.call('SADD', KEYS[2], id)
    used = used + 1
    out[#out + 1] = 0
  else
    out[#out + 1] = 2
  end
end
redis.call('SET', KEYS[1], used, 'EX', ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
table.insert(out, 1, used)
return out
`;

// KEYS: counter. ARGV: limit, count, counter ttl. Returns {granted (0/1), used}.
const RESERVE_COUNT = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local count = tonumber(ARGV[2])
if used + count > tonumber(ARGV[1]) then return {0, used} end
used = redis.call('INCRBY', KEYS[1], count)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return {1, used}
`;

// KEYS: counter, seen (current), seen (previous). ARGV: count, ids...
const RELEASE = `
local removed = 0
for i = 2, #ARGV do
  removed = removed + redis.call('SREM', KEYS[2], ARGV[i]) + redis.call('SREM', KEYS[3], ARGV[i])
end
local total = removed + tonumber(ARGV[1])
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if total > used then total = used end
if total > 0 then redis.call('DECRBY', KEYS[1], total) end
return total
`;

export function createAllowance(deps: { redis: Redis; now?: () => number }): Allowance {
  const { redis } = deps;
  const now = deps.now ?? Date.now;

  // Keys share the {accountId} hash tag so one script touches one Redis Cluster slot.
  function keys(account: Account, atMs: number) {
    const period = quotaPeriod(atMs);
    const bucket = Math.floor(atMs / SEEN_BUCKET_MS);
    return {
      period,
      counter: `quota:{${account.id}}:${period.id}`,
      seenCurrent: `quota:{${account.id}}:seen:${bucket}`,
      seenPrevious: `quota:{${account.id}}:seen:${bucket - 1}`,
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
          3,
          k.counter,
          k.seenCurrent,
          k.seenPrevious,
          PLAN_LIMITS[account.plan],
          COUNTER_TTL_S,
          SEEN_TTL_S,
          ...eventIds,
        )) as number[];
        const [used = 0, ...codes] = result;
        const decisions = codes.map((c): EventDecision => (c === 0 ? 'counted' : c === 1 ? 'repeat' : 'over'));
        return { decisions, state: toState(account, used, k.period) };
      }),

    reserveCount: (account, count) =>
      guarded('reserve', async () => {
        const k = keys(account, now());
        const [granted = 0, used = 0] = (await redis.eval(RESERVE_COUNT, 1, k.counter, PLAN_LIMITS[account.plan], count, COUNTER_TTL_S)) as number[];
        return { granted: granted === 1, state: toState(account, used, k.period) };
      }),

    release: (account, release) =>
      guarded('release', async () => {
        const k = keys(account, now());
        await redis.eval(RELEASE, 3, k.counter, k.seenCurrent, k.seenPrevious, release.count ?? 0, ...(release.eventIds ?? []));
      }),
  };
}

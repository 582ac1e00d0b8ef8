import { AppError, type Redis, redisScript } from '@ingest/platform';
import {
  boundedReason,
  daysCovering,
  decodeSyncHealth,
  type HourCounts,
  hourBucket,
  hourlySeries,
  type OutcomeCounts,
  SYNC_HEALTH_HISTORY_HOURS,
  SYNC_HEALTH_VERSION,
  SYNC_OUTCOMES,
  type SyncHealthRecord,
  type SyncHealthState,
} from './sync-health.js';

/**
 * Where an account's sync health lives (Redis), the one owner of its keys: the crm-sink writes,
 * the console reads (docs/crm-sync.md, "Sync health"; sizes in docs/limits.md).
 *
 * - Counts: one hash per account and UTC day, fields `HH:synced|skipped|failed`, HINCRBY'd once
 *   per flush and expiring SYNC_HEALTH_COUNTS_TTL_SECONDS after their last write. At most 72
 *   small fields, so Redis keeps each day as a listpack (about 1 KB).
 * - State: one hash per account (`v`, state, reason, since, unhealthySince, updatedAt,
 *   lastSuccessAt, lastFailureAt), and a sorted set of the accounts that are not running, scored
 *   by when they stopped. Both under one Redis Cluster hash tag, so the state script changes them
 *   atomically; the sorted set is what the metrics read, a bounded number of entries at a time.
 *   The state hash expires SYNC_HEALTH_STATE_TTL_SECONDS after its last change, so accounts that
 *   are gone leave nothing for ever.
 */
export const SYNC_HEALTH_COUNTS_TTL_SECONDS = 8 * 24 * 3600;
export const SYNC_HEALTH_STATE_TTL_SECONDS = 35 * 24 * 3600;

export interface SyncHealthChange {
  state: SyncHealthState;
  reason?: string;
  /** Something was synced now (sets lastSuccessAt). */
  success?: boolean;
  /** Something failed now (sets lastFailureAt). */
  failure?: boolean;
  /** Change only while the account is in this state (e.g. clear `credential_broken` only). */
  onlyFrom?: SyncHealthState;
}

export interface UnhealthyAccount {
  accountId: string;
  state: SyncHealthState;
  unhealthySinceMs: number;
}

export interface SyncHealthView {
  /** Undefined: nothing synced or failed for the account yet (or not within the state's TTL). */
  current?: SyncHealthRecord;
  /** The last SYNC_HEALTH_HISTORY_HOURS hours, oldest first. */
  hours: HourCounts[];
}

export interface SyncHealthStore {
  /** Adds an account's outcomes to the current hour; zero counts write nothing. */
  count(accountId: string, counts: Partial<OutcomeCounts>, atMs: number): Promise<void>;
  /** Sets the account's state (and its reason); false when `onlyFrom` did not match. */
  change(accountId: string, change: SyncHealthChange, atMs: number): Promise<boolean>;
  read(accountId: string, nowMs: number): Promise<SyncHealthView>;
  /**
   * Accounts not running: how many, how many for at least `stuckAfterMs`, and the `limit` that
   * stopped first (oldest first). Entries whose state hash expired or went back to running
   * meanwhile are removed on the way.
   */
  unhealthy(nowMs: number, options: { limit: number; stuckAfterMs: number }): Promise<{ total: number; stuck: number; oldest: UnhealthyAccount[] }>;
}

// KEYS: state hash, unhealthy zset. ARGV: account, state, reason, now, ttlSeconds, success, failure, onlyFrom, version.
const CHANGE = redisScript(
  `
local current = redis.call('HGET', KEYS[1], 'state')
if ARGV[8] ~= '' and current ~= ARGV[8] then return 0 end
if current ~= ARGV[2] then redis.call('HSET', KEYS[1], 'since', ARGV[4]) end
redis.call('HSET', KEYS[1], 'v', ARGV[9], 'state', ARGV[2], 'reason', ARGV[3], 'updatedAt', ARGV[4])
if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'lastSuccessAt', ARGV[4]) end
if ARGV[7] == '1' then redis.call('HSET', KEYS[1], 'lastFailureAt', ARGV[4]) end
if ARGV[2] == 'running' then
  redis.call('HDEL', KEYS[1], 'unhealthySince')
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  local since = redis.call('HGET', KEYS[1], 'unhealthySince')
  if not since then
    since = ARGV[4]
    redis.call('HSET', KEYS[1], 'unhealthySince', since)
  end
  redis.call('ZADD', KEYS[2], since, ARGV[1])
end
redis.call('EXPIRE', KEYS[1], ARGV[5])
return 1
`,
  'crm_sync_health_change',
);

function unavailable(what: string, err: unknown): AppError {
  return new AppError('sync_health_unavailable', `${what}: ${err instanceof Error ? err.message : String(err)}`, { retryable: true });
}

export function syncHealthKeys(keyPrefix = '') {
  const tag = `${keyPrefix}crm:health:{accounts}`;
  const id = (accountId: string) => encodeURIComponent(accountId);
  return {
    state: (accountId: string) => `${tag}:state:${id(accountId)}`,
    unhealthy: `${tag}:unhealthy`,
    /** The account is the hash tag of its day hashes: they spread over a cluster's nodes. */
    day: (accountId: string, day: string) => `${keyPrefix}crm:health:{${id(accountId)}}:day:${day}`,
  };
}

export function createSyncHealthStore(deps: { redis: Redis; keyPrefix?: string; countsTtlSeconds?: number; stateTtlSeconds?: number }): SyncHealthStore {
  const { redis } = deps;
  const keys = syncHealthKeys(deps.keyPrefix);
  const countsTtl = deps.countsTtlSeconds ?? SYNC_HEALTH_COUNTS_TTL_SECONDS;
  const stateTtl = deps.stateTtlSeconds ?? SYNC_HEALTH_STATE_TTL_SECONDS;

  return {
    async count(accountId, counts, atMs) {
      const present = SYNC_OUTCOMES.filter((o) => (counts[o] ?? 0) > 0);
      if (present.length === 0) return;
      const { day, hour } = hourBucket(atMs);
      const key = keys.day(accountId, day);
      const pipeline = redis.pipeline();
      for (const outcome of present) pipeline.hincrby(key, `${hour}:${outcome}`, counts[outcome] ?? 0);
      pipeline.expire(key, countsTtl);
      let results: [Error | null, unknown][];
      try {
        results = (await pipeline.exec()) ?? [];
      } catch (err) {
        throw unavailable('counting sync outcomes failed', err);
      }
      const failed = results.find(([err]) => err !== null);
      if (failed) throw unavailable('counting sync outcomes failed', failed[0]);
    },
    async change(accountId, change, atMs) {
      try {
        const changed = await CHANGE(
          redis,
          [keys.state(accountId), keys.unhealthy],
          [
            accountId,
            change.state,
            change.state === 'running' ? '' : boundedReason(change.reason ?? ''),
            atMs,
            stateTtl,
            change.success ? '1' : '0',
            change.failure ? '1' : '0',
            change.onlyFrom ?? '',
            SYNC_HEALTH_VERSION,
          ],
        );
        return Number(changed) === 1;
      } catch (err) {
        throw unavailable('recording the sync state failed', err);
      }
    },
    async read(accountId, nowMs) {
      const days = daysCovering(nowMs, SYNC_HEALTH_HISTORY_HOURS);
      const pipeline = redis.pipeline();
      pipeline.hgetall(keys.state(accountId));
      for (const day of days) pipeline.hgetall(keys.day(accountId, day));
      let results: [Error | null, unknown][];
      try {
        results = (await pipeline.exec()) ?? [];
      } catch (err) {
        throw unavailable('reading sync health failed', err);
      }
      const failed = results.find(([err]) => err !== null);
      if (failed) throw unavailable('reading sync health failed', failed[0]);
      const [state, ...dayHashes] = results.map(([, value]) => (value ?? {}) as Record<string, string>);
      const byDay = new Map(days.map((day, i) => [day, dayHashes[i] ?? {}]));
      const current = decodeSyncHealth(state ?? {});
      return { ...(current ? { current } : {}), hours: hourlySeries(nowMs, SYNC_HEALTH_HISTORY_HOURS, byDay) };
    },
    async unhealthy(nowMs, options) {
      const [total, stuck, listed] = await Promise.all([
        redis.zcard(keys.unhealthy),
        redis.zcount(keys.unhealthy, '-inf', String(nowMs - options.stuckAfterMs)),
        options.limit > 0 ? redis.zrange(keys.unhealthy, 0, String(options.limit - 1)) : Promise.resolve([]),
      ]).catch((err: unknown) => {
        throw unavailable('reading unhealthy accounts failed', err);
      });
      const oldest: UnhealthyAccount[] = [];
      const stale: string[] = [];
      const records = await Promise.all(listed.map(async (accountId) => decodeSyncHealth(await redis.hgetall(keys.state(accountId)))));
      listed.forEach((accountId, i) => {
        const record = records[i];
        if (!record || record.state === 'running' || record.unhealthySinceMs === undefined) stale.push(accountId);
        else oldest.push({ accountId, state: record.state, unhealthySinceMs: record.unhealthySinceMs });
      });
      if (stale.length > 0) await redis.zrem(keys.unhealthy, ...stale);
      return { total: total - stale.length, stuck, oldest };
    },
  };
}

import type { Redis } from '@ingest/platform';
import { globEscape, redisScript, scanKeys } from '@ingest/platform';
import { COUNTER_TTL_S } from './allowance.js';
import { accountOfCounterKey, allowanceKeys, seenKeys } from './allowance.keys.js';
import { RECONCILE, SWEEP_SEEN } from './allowance.scripts.js';
import { SEEN_BUCKET_MS } from './seen-ids.js';

/** The allowance as the processor sees it: it knows accounts only by id. */
export interface AllowanceReconciler {
  /** Accounts with a counter in the period `YYYYMM`. */
  accountsWithCounters(periodId: string): Promise<string[]>;
  /** counter := exact + counted in hours >= fromHour + pending jobs; forgets older hours. Returns the new value. */
  reconcile(accountId: string, periodId: string, exact: number, fromHour: number): Promise<number>;
  /** Events refused for the allowance in the period (402s and per-event quota_exceeded). */
  refused(accountId: string, periodId: string): Promise<number>;
  /** Jobs of the period whose reservation is not settled yet. */
  pendingJobs(accountId: string, periodId: string): Promise<string[]>;
  /**
   * Deletes every account's remembered ids of buckets that are no longer looked up (older than
   * the one before the current bucket). Returns the number of shard sets deleted.
   */
  sweepSeen(nowMs: number): Promise<number>;
}

const reconcileScript = redisScript(RECONCILE, 'allowance_reconcile');
const sweepScript = redisScript(SWEEP_SEEN, 'allowance_sweep_seen');

export function createAllowanceReconciler(redis: Redis, keyPrefix = ''): AllowanceReconciler {
  // SCAN patterns are globs: the prefix's own glob characters are escaped.
  const globPrefix = globEscape(keyPrefix);
  const scan = (pattern: string) => scanKeys(redis, pattern);

  /**
   * Shard 0 of buckets swept before SWEEP_SEEN unlinked it (see there): in no registry any more,
   * found by their shape (`…:seen:<bucket>:`, the only shard keys ending in a colon), one UNLINK
   * per account (one slot). Nothing is left to find once a release with the fix has swept once;
   * the SCAN stays for deployments that upgrade later.
   */
  async function unlinkStrayShardZero(keep: number): Promise<number> {
    const byAccount = new Map<string, string[]>();
    for (const key of await scan(`${globPrefix}quota:{*}:seen:*:`)) {
      const match = /^quota:\{(.+)\}:seen:(\d+):$/.exec(key.slice(keyPrefix.length));
      if (!match?.[1] || Number(match[2]) >= keep) continue;
      const keys = byAccount.get(match[1]);
      if (keys) keys.push(key);
      else byAccount.set(match[1], [key]);
    }
    let unlinked = 0;
    for (const keys of byAccount.values()) {
      for (let i = 0; i < keys.length; i += 1_000) unlinked += await redis.unlink(...keys.slice(i, i + 1_000));
    }
    return unlinked;
  }

  return {
    async accountsWithCounters(periodId) {
      const accounts = new Set<string>();
      for (const key of await scan(`${globPrefix}quota:{*}:${periodId}`)) {
        const account = accountOfCounterKey(key, keyPrefix, periodId);
        if (account) accounts.add(account);
      }
      return [...accounts];
    },
    async reconcile(accountId, periodId, exact, fromHour) {
      const k = allowanceKeys(accountId, periodId, keyPrefix);
      return Number(await reconcileScript(redis, [k.counter, k.hours], [exact, fromHour, COUNTER_TTL_S]));
    },
    async refused(accountId, periodId) {
      return Number((await redis.get(allowanceKeys(accountId, periodId, keyPrefix).refused)) ?? 0);
    },
    async pendingJobs(accountId, periodId) {
      const fields = await redis.hkeys(allowanceKeys(accountId, periodId, keyPrefix).hours);
      return fields.filter((f) => f.startsWith('job:')).map((f) => f.slice('job:'.length));
    },
    async sweepSeen(nowMs) {
      const keep = Math.floor(nowMs / SEEN_BUCKET_MS) - 1;
      let unlinked = 0;
      for (const registry of await scan(`${globPrefix}quota:{*}:seen`)) {
        const accountId = /^quota:\{(.+)\}:seen$/.exec(registry.slice(keyPrefix.length))?.[1];
        if (!accountId) continue;
        unlinked += Number(await sweepScript(redis, [registry], [keep, seenKeys(accountId, keyPrefix).shardPrefix]));
      }
      return unlinked + (await unlinkStrayShardZero(keep));
    },
  };
}

import { randomBytes, randomUUID } from 'node:crypto';
import { type Account, createAllowance, PLAN_LIMITS, allowanceKeys, allowancePeriod, SEEN_BUCKET_MS } from '@ingest/domain';
import { globEscape, type Redis } from '@ingest/platform';
import { redisInfo } from './environment.js';
import { wholeIdReservation } from './allowance-baseline.js';
import { n0, n1, say } from './say.js';

export interface AllowanceRun {
  /** Redis used_memory grown per id remembered (measured with the account's keys only). */
  bytesPerId: number;
  /** Redis CPU (user + sys) per 1 M ids reserved. */
  redisCpuSecondsPerMillion: number;
  /** Bytes appended to Redis's append-only file per id (undefined when AOF is off). */
  aofBytesPerId?: number;
  seconds: number;
}

export interface AllowanceResult {
  ids: number;
  idsPerRequest: number;
  plan: string;
  /** The implementation before fingerprints (allowance-baseline.ts). */
  baseline: AllowanceRun;
  current: AllowanceRun;
}

/**
 * The allowance alone against the bench's Redis: the same caller-chosen ids (UUIDs), in requests
 * of `idsPerRequest`, spread evenly over two 15-minute buckets of a simulated clock (so a third
 * fall in a bucket's look-back minutes), reserved once by the previous implementation (the
 * baseline) and once by the current one. Judged: bytes per remembered id and Redis CPU per 1 M.
 *
 * `ids` defaults to the growth plan's monthly limit: the most ids a growth account can have
 * counted, hence remembered, in a month.
 */
export async function runAllowancePhase(options: { redis: Redis; prefix: string; ids: number; idsPerRequest: number }): Promise<AllowanceResult> {
  const { redis, ids, idsPerRequest } = options;
  const plan = 'growth' as const;
  const eventIds = Array.from({ length: ids }, () => randomUUID());
  const start = Math.floor(Date.now() / SEEN_BUCKET_MS) * SEEN_BUCKET_MS - 2 * SEEN_BUCKET_MS;
  const atOf = (i: number) => start + Math.floor((i / ids) * 2 * SEEN_BUCKET_MS);

  async function measure(name: string, prefix: string, reserve: (batch: string[], atMs: number) => Promise<unknown>): Promise<AllowanceRun> {
    const [cpu0, mem0, aof0] = [await redisCpu(redis), await usedMemory(redis), await aofSize(redis)];
    const t0 = Date.now();
    for (let i = 0; i < ids; i += idsPerRequest) await reserve(eventIds.slice(i, i + idsPerRequest), atOf(i));
    const seconds = (Date.now() - t0) / 1000;
    // A rewrite of the append-only file that these writes set off is their cost, not the next run's.
    await aofRewritesDone(redis);
    const [cpu1, mem1, aof1] = [await redisCpu(redis), await usedMemory(redis), await aofSize(redis)];
    await deletePrefix(redis, prefix);
    const run: AllowanceRun = { bytesPerId: (mem1 - mem0) / ids, redisCpuSecondsPerMillion: ((cpu1 - cpu0) / ids) * 1e6, seconds };
    // A rewrite of the file in between changes its size by other than what was appended: no figure then.
    if (aof0 && aof1 && aof0.rewrites === aof1.rewrites && !aof0.rewriting && !aof1.rewriting) run.aofBytesPerId = (aof1.size - aof0.size) / ids;
    const aof = run.aofBytesPerId === undefined ? '' : `, ${n1(run.aofBytesPerId)} B of append-only file per id`;
    say('allowance', `${name}: ${n1(run.bytesPerId)} B per id, ${n1(run.redisCpuSecondsPerMillion)} Redis CPU s per 1M ids${aof} (${n1(seconds)} s)`);
    return run;
  }

  say('allowance', `${n0(ids)} caller-chosen ids, ${idsPerRequest} per request, over two 15-minute buckets (simulated clock)`);
  const baselinePrefix = `${options.prefix}allowance-baseline:`;
  const baseline = await measure('baseline (whole ids)', baselinePrefix, wholeIdReservation(redis, baselinePrefix, 'acc_bench', Number.MAX_SAFE_INTEGER));
  const currentPrefix = `${options.prefix}allowance-current:`;
  let clock = start;
  const allowance = createAllowance({ redis, keyPrefix: currentPrefix, now: () => clock, seenIdsKey: randomBytes(32) });
  const account: Account = { id: 'acc_bench', name: 'bench', plan, createdAt: '', updatedAt: '' };
  const counter = allowanceKeys(account.id, allowancePeriod(start).id, currentPrefix).counter;
  let counted = 0;
  const current = await measure('current (fingerprints)', currentPrefix, async (batch, atMs) => {
    clock = atMs;
    // Beyond the plan's limit (more ids asked for than a growth account can be counted), the
    // counter is set back so that every id is counted and remembered, like the baseline's.
    if (counted + batch.length > PLAN_LIMITS[plan]) {
      await redis.set(counter, 0);
      counted = 0;
    }
    counted += batch.length;
    return allowance.reserveEvents(account, batch, atMs);
  });
  return { ids, idsPerRequest, plan, baseline, current };
}

/** One section of Redis INFO, read once: a field by name as a number (NaN when the section has no such field). */
/** Redis's CPU (user + sys), with that of its finished children (append-only file rewrites). */
async function redisCpu(redis: Redis): Promise<number> {
  const field = await redisInfo(redis, 'cpu');
  return ['used_cpu_user', 'used_cpu_sys', 'used_cpu_user_children', 'used_cpu_sys_children'].reduce((sum, name) => sum + (field(name) || 0), 0);
}

/** A rewrite of the append-only file runs or is scheduled. */
const rewriting = (field: (name: string) => number) => field('aof_rewrite_in_progress') === 1 || field('aof_rewrite_scheduled') === 1;

/** Waits until no rewrite of the append-only file runs or is scheduled (at most a minute). */
async function aofRewritesDone(redis: Redis): Promise<void> {
  for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
    if (!rewriting(await redisInfo(redis, 'persistence'))) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The append-only file's size and rewrites so far, or undefined when Redis runs without one. */
async function aofSize(redis: Redis): Promise<{ size: number; rewrites: number; rewriting: boolean } | undefined> {
  const field = await redisInfo(redis, 'persistence');
  if (field('aof_enabled') !== 1) return undefined;
  return { size: field('aof_current_size'), rewrites: field('aof_rewrites'), rewriting: rewriting(field) };
}

async function usedMemory(redis: Redis): Promise<number> {
  return (await redisInfo(redis, 'memory'))('used_memory');
}

/** DEL, not UNLINK: memory must be freed before the next run measures its own growth. */
async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${globEscape(prefix)}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
}

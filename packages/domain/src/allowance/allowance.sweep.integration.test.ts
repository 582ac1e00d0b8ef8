/**
 * The seen-id memory is forgotten bucket by bucket (SWEEP_SEEN through the reconciler): once a
 * bucket is no longer looked up, none of its shard sets may stay in Redis. Shard 0's key has
 * nothing after the bucket's colon, and a sweep that unlinked `<bucket>:0` instead left it for
 * good, a share of every remembered id (found on 2026-11-29 while measuring memory over time).
 */
import { createRedis, type Redis, scanKeys } from '@ingest/platform';
import { integrationEnv } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Account } from '../control-plane/types.js';
import { createAllowance } from './allowance.js';
import { seenKeys } from './allowance.keys.js';
import { createAllowanceReconciler } from './allowance.reconciler.js';
import { SEEN_BUCKET_MS } from './seen-ids.js';

const PREFIX = `sweep-${process.pid}-${Date.now()}:`;
const KEY = Buffer.from('allowance-sweep-test-seen-ids-key-0123456789');
// The free plan's 1,000 events a month make 8 shards: 400 ids fill every one of them, shard 0 included.
const account: Account = { id: 'acc_sweep', name: 's', plan: 'free', createdAt: '', updatedAt: '' };
const BUCKET_START = Math.floor(Date.UTC(2026, 10, 12, 10, 7) / SEEN_BUCKET_MS) * SEEN_BUCKET_MS;
let redis: Redis;

beforeAll(() => {
  redis = createRedis({ url: integrationEnv().redisUrl });
});

afterAll(async () => {
  const left = await keysOf('*');
  if (left.length > 0) await redis.unlink(...left);
  redis.disconnect();
});

async function keysOf(pattern: string): Promise<string[]> {
  return (await scanKeys(redis, `${PREFIX}${pattern}`)).sort();
}

const ids = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}-${i}`);

describe('forgetting the seen-id memory', () => {
  it('unlinks every shard of a bucket no longer looked up, shard 0 included, and keeps the buckets still in use', async () => {
    const allowance = createAllowance({ redis, keyPrefix: PREFIX, now: () => BUCKET_START, seenIdsKey: KEY });
    const { shardPrefix } = seenKeys(account.id, PREFIX);
    const old = BUCKET_START / SEEN_BUCKET_MS;
    await allowance.reserveEvents(account, ids(400, 'old'), BUCKET_START + 1_000);
    // Two buckets later: the old one is no longer looked up, this one is.
    const later = BUCKET_START + 2 * SEEN_BUCKET_MS + 1_000;
    await allowance.reserveEvents(account, ids(300, 'new'), later);
    const oldShards = await keysOf(`quota:{${account.id}}:seen:${old}:*`);
    expect(oldShards, 'shard 0 of the old bucket (nothing after its colon) is among its sets').toContain(`${shardPrefix}${old}:`);
    expect(oldShards).toHaveLength(8);
    const current = await keysOf(`quota:{${account.id}}:seen:${old + 2}:*`);
    expect(current.length).toBeGreaterThan(0);

    const swept = await createAllowanceReconciler(redis, PREFIX).sweepSeen(later);

    expect(await keysOf(`quota:{${account.id}}:seen:${old}:*`), 'the old bucket is gone, every shard of it').toEqual([]);
    expect(swept).toBe(8);
    expect(await keysOf(`quota:{${account.id}}:seen:${old + 2}:*`), 'the current bucket is kept').toEqual(current);
    expect(await redis.hkeys(`${PREFIX}quota:{${account.id}}:seen`)).toEqual([String(old + 2)]);
  });

  it('unlinks the shard 0 sets an earlier release left behind (in no registry any more), and only old ones', async () => {
    const other: Account = { ...account, id: 'acc_sweep_left' };
    const { shardPrefix } = seenKeys(other.id, PREFIX);
    const bucket = BUCKET_START / SEEN_BUCKET_MS;
    // What the earlier sweep left: shard 0 of swept buckets, their registry fields gone.
    await redis.sadd(`${shardPrefix}${bucket - 10}:`, '12345');
    await redis.sadd(`${shardPrefix}${bucket - 3}:`, '67890');
    // A bucket still looked up, written by the current release.
    await redis.sadd(`${shardPrefix}${bucket}:`, '13579');

    const swept = await createAllowanceReconciler(redis, PREFIX).sweepSeen(BUCKET_START + 1_000);

    // The two strays; the first test's account has only its current bucket left.
    expect(swept).toBe(2);
    expect(await keysOf(`quota:{${other.id}}:seen:*`)).toEqual([`${shardPrefix}${bucket}:`]);
  });
});

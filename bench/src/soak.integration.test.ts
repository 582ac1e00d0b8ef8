/**
 * The soak tells the seen-id sets apart from the rest of Redis (soak.ts): the bytes it reads
 * must be every set of the account, shard 0 (whose key ends in the bucket's colon) included,
 * and the rest everything else of the run's prefix (another account's sets included).
 */
import { createAllowance, seenKeys } from '@ingest/domain';
import { createRedis, type Redis, scanKeys } from '@ingest/platform';
import { integrationEnv } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seenIdsAndTheRest } from './soak.js';

const PREFIX = `soak-${process.pid}-${Date.now()}:`;
const AT = Date.UTC(2026, 10, 29, 10, 7);
let redis: Redis;

beforeAll(() => {
  redis = createRedis({ url: integrationEnv().redisUrl });
});

afterAll(async () => {
  const keys = await scanAll(`${PREFIX}*`);
  if (keys.length > 0) await redis.unlink(...keys);
  redis.disconnect();
});

const scanAll = (pattern: string) => scanKeys(redis, pattern);

describe('seenIdsAndTheRest', () => {
  it('sums MEMORY USAGE over every seen-id set of the account, and the rest apart', async () => {
    const allowance = createAllowance({ redis, keyPrefix: PREFIX, now: () => AT, seenIdsKey: Buffer.from('soak-integration-seen-ids-key-0123456789') });
    const account = { id: 'acc_soak', name: 's', plan: 'free' as const, createdAt: '', updatedAt: '' };
    await allowance.reserveEvents(
      account,
      Array.from({ length: 400 }, (_, i) => `evt-${i}`),
      AT,
    );
    await allowance.reserveEvents(
      { ...account, id: 'acc_other' },
      Array.from({ length: 400 }, (_, i) => `evt-${i}`),
      AT,
    );

    const { shardPrefix } = seenKeys(account.id, PREFIX);
    const keys = await scanAll(`${shardPrefix}*`);
    expect(keys, 'the free plan has 8 shards, shard 0 among them').toHaveLength(8);
    expect(keys.some((k) => k.endsWith(':'))).toBe(true);
    const usage = async (ks: string[]) => {
      let bytes = 0;
      for (const key of ks) bytes += Number(await redis.call('MEMORY', 'USAGE', key));
      return bytes;
    };
    const others = (await scanAll(`${PREFIX}*`)).filter((k) => !keys.includes(k));
    expect(others.some((k) => k.includes('{acc_other}:seen:'))).toBe(true);

    const measured = await seenIdsAndTheRest(redis, PREFIX, account.id);

    expect(measured.seenIds).toBe(await usage(keys));
    // Redis's own overhead comes on top of the other keys.
    expect(measured.rest).toBeGreaterThan(await usage(others));
  });
});

/**
 * The soak tells the seen-id sets apart from the rest of Redis (soak.ts): the bytes it reads
 * must be every set of the account, shard 0 (whose key ends in the bucket's colon) included,
 * and nothing of another account.
 */
import { createAllowance, seenKeys } from '@ingest/domain';
import { createRedis, type Redis } from '@ingest/platform';
import { integrationEnv } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seenIdsBytes } from './soak.js';

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

async function scanAll(pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1_000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  return keys;
}

describe('seenIdsBytes', () => {
  it('sums MEMORY USAGE over every seen-id set of the account and of no other', async () => {
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
    let expected = 0;
    for (const key of keys) expected += Number(await redis.call('MEMORY', 'USAGE', key));

    expect(await seenIdsBytes(redis, PREFIX, account.id)).toBe(expected);
  });
});

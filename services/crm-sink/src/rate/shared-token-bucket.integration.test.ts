/**
 * Real server: Redis. The token bucket of an account is one for all replicas.
 */
import { createRedis, type Redis } from '@ingest/platform';
import { integrationEnv, uniqueSuffix } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSharedTokenBuckets } from './shared-token-bucket.js';

let redis: Redis & { close(): Promise<void> };
const keyPrefix = `t${uniqueSuffix()}:`;

beforeAll(async () => {
  redis = createRedis({ url: integrationEnv().redisUrl });
  await redis.connect();
});

afterAll(async () => {
  const keys = await redis.keys(`${keyPrefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.close();
});

describe('shared token bucket', () => {
  it('gives two replicas one burst per account between them, and each account its own', async () => {
    // A slow refill (one token per 2 s) so that the test's own duration adds no token.
    const rate = { ratePerSecond: 0.5, burst: 5 };
    const replicaA = createSharedTokenBuckets({ redis, keyPrefix, rate });
    const replicaB = createSharedTokenBuckets({ redis, keyPrefix, rate });
    const takes = [];
    for (let i = 0; i < 6; i += 1) {
      takes.push(await replicaA('acc_1')());
      takes.push(await replicaB('acc_1')());
    }
    expect(takes.filter((w) => w === 0)).toHaveLength(5);
    const waits = takes.filter((w) => w > 0);
    expect(waits).toHaveLength(7);
    expect(Math.max(...waits)).toBeLessThanOrEqual(2_000);
    expect(await replicaB('acc_2')()).toBe(0);
  });
});

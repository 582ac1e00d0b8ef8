/**
 * Real server: Redis. The factory connects lazily and closes cleanly.
 */
import { describe, expect, it } from 'vitest';
import { createRedis } from './redis.js';
import { integrationEnv, uniqueSuffix } from '@ingest/testkit';

describe('createRedis', () => {
  it('talks to the real server and closes', async () => {
    const redis = createRedis({ url: integrationEnv().redisUrl });
    const key = `test:${uniqueSuffix()}`;
    try {
      expect(await redis.ping()).toBe('PONG');
      expect(await redis.incrby(key, 5)).toBe(5);
      await redis.del(key);
    } finally {
      await redis.close();
    }
    expect(redis.status).toBe('end');
  });
});

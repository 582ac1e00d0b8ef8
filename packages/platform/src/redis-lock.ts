import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { redisScript } from './redis-script.js';

const releaseScript = redisScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, 'lock_release');

/**
 * A lease in Redis: held by one caller at a time until released or `ttlMs` passed. For work
 * that must not run twice at once across replicas (closing a billing period). Released only by
 * its holder (a random token), so a lease that expired and was taken by another is left alone.
 */
export async function tryLease(redis: Redis, key: string, ttlMs: number): Promise<(() => Promise<void>) | undefined> {
  const token = randomBytes(16).toString('hex');
  const taken = await redis.set(key, token, 'PX', ttlMs, 'NX');
  if (taken !== 'OK') return undefined;
  return async () => {
    await releaseScript(redis, [key], [token]);
  };
}

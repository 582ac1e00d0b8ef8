/**
 * The HTTP layer's Redis stores under the users of the roles that run them (redis-acl.ts), on a
 * redis-server of the test's own with the role users: idempotency records, API keys' last use,
 * and the per-address limiter's plugin script, for the gateway and the console. The processor and
 * crm-sink have none of these grants.
 */
import { createLogger, createRedis, METRIC_NAMES, type Redis, type RedisRole } from '@ingest/platform';
import { Registry } from 'prom-client';
import { type RedisWithRoles, startRedisWithRoles } from '@ingest/testkit';
import { uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeyLastUsedStore } from './auth/key-last-used.store.js';
import { createIdempotencyStore } from './jobs/idempotency.store.js';
import { rateLimitStore } from './limits/rate-limit.store.js';

let own: RedisWithRoles;
const logger = createLogger({ service: 'test', level: 'silent' });
const as = (role: RedisRole): Promise<Redis> => own.connectAs(role);

beforeAll(async () => {
  own = await startRedisWithRoles();
});

afterAll(async () => {
  await own?.close();
});

function incr(redis: Redis, nameSpace: string, key: string): Promise<number> {
  const Store = rateLimitStore(redis, nameSpace) as unknown as new (o: object) => {
    incr(key: string, cb: (err: Error | null, result?: { current: number }) => void, timeWindow: number, max: number): void;
  };
  return new Promise((resolve, reject) => new Store({}).incr(key, (err, result) => (err ? reject(err) : resolve(result?.current ?? -1)), 60_000, 10));
}

describe('HTTP stores under the gateway’s and the console’s Redis users', () => {
  it('idempotency, last use of API keys and the per-address limiter work for both; the processor and crm-sink reach none of them', async () => {
    for (const role of ['gateway', 'console'] as const) {
      const redis = await as(role);
      const idempotency = createIdempotencyStore({ redis });
      expect(await idempotency.claim(`acc_${role}`, 'k1', 'f1')).toEqual({ kind: 'claimed' });
      expect(await idempotency.claim(`acc_${role}`, 'k1', 'f1')).toEqual({ kind: 'in_progress' });
      await idempotency.complete(`acc_${role}`, 'k1', { jobId: 'job_1', totalEvents: 2, status: 'queued' });
      expect((await idempotency.claim(`acc_${role}`, 'k1', 'f1')).kind).toBe('replay');
      expect(await idempotency.peek(`acc_${role}`, 'k1')).toMatchObject({ state: 'done' });
      expect(await idempotency.claim(`acc_${role}`, 'k2', 'f2')).toEqual({ kind: 'claimed' });
      await idempotency.release(`acc_${role}`, 'k2');

      const lastUsed = createKeyLastUsedStore({ redis, logger });
      lastUsed.touched(`key_${role}`);
      await waitFor(async () => (await lastUsed.lastUsed([`key_${role}`])).has(`key_${role}`), { description: `last use of key_${role}` });

      expect(await incr(redis, 'ratelimit:', `127.0.0.1-${role}`)).toBe(1);
    }
    const consoleRedis = await as('console');
    // Its script is named for the command timings (ingest_redis_command_duration_seconds).
    const registry = new Registry();
    const timed = createRedis({ url: own.roleUrls.gateway, metrics: registry });
    try {
      expect(await incr(timed, 'ratelimit:', `127.0.0.1-timed-${uniqueSuffix()}`)).toBe(1);
      const counts = (await registry.getSingleMetric(METRIC_NAMES.redisCommandDuration)?.get())?.values.filter((v) =>
        (v as { metricName?: string }).metricName?.endsWith('_count'),
      );
      expect(counts?.map((v) => `${v.labels.command}/${v.labels.script}=${v.value}`)).toContain('evalsha/rate_limit_address=1');
    } finally {
      await timed.close();
    }
    expect(await incr(consoleRedis, 'ratelimit-admin:', '127.0.0.1')).toBe(1);
    expect(await incr(consoleRedis, 'dashboard:signin:', 'email:abc')).toBe(1);
    // The sign-in throttle is the console's: the gateway cannot reset or raise anyone's count.
    await expect(incr(await as('gateway'), 'dashboard:signin:', 'email:abc')).rejects.toThrow(/redis_unavailable|can't|NOPERM/);

    for (const role of ['processor', 'crm-sink'] as const) {
      const redis = await as(role);
      await expect(createIdempotencyStore({ redis }).peek('acc_gateway', 'k1')).rejects.toThrow(/NOPERM/);
      await expect(incr(redis, 'ratelimit:', '127.0.0.1')).rejects.toThrow(/can't|NOPERM/);
    }
  });
});

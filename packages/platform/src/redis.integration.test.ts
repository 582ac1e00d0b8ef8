/**
 * Real server: Redis. The factory connects lazily and closes cleanly, and times every command.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { METRIC_NAMES } from './metrics.js';
import { createRedis } from './redis.js';
import { redisScript } from './redis-script.js';
import { integrationEnv, uniqueSuffix } from '@ingest/testkit';

/** Observations of ingest_redis_command_duration_seconds by `command/script`. */
async function redisTimings(registry: Registry): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric(METRIC_NAMES.redisCommandDuration);
  const counts: Record<string, number> = {};
  for (const v of (await metric?.get())?.values ?? []) {
    if ((v as { metricName?: string }).metricName?.endsWith('_count')) counts[`${v.labels.command}/${v.labels.script}`] = v.value;
  }
  return counts;
}

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

  it('times each command once, by command and by the name of its script, failed ones too', async () => {
    const registry = new Registry();
    const redis = createRedis({ url: integrationEnv().redisUrl, metrics: registry });
    const key = `test:${uniqueSuffix()}`;
    const named = redisScript(`return redis.call('INCRBY', KEYS[1], ARGV[1]) -- ${key}`, 'test_timed_script');
    try {
      expect(await named(redis, [key], [2])).toBe(2);
      expect(await named(redis, [key], [3])).toBe(5);
      expect(await redis.get(key)).toBe('5');
      await redis.set(`${key}:text`, 'not a number');
      await expect(redis.incr(`${key}:text`)).rejects.toThrow(/not an integer/);
      await redis.del(key, `${key}:text`);
      const timings = await redisTimings(registry);
      // The first call did not find the script (NOSCRIPT) and sent its text: one EVALSHA each, one EVAL.
      expect(timings, JSON.stringify(timings)).toMatchObject({
        'evalsha/test_timed_script': 2,
        'eval/eval': 1,
        'get/': 1,
        'set/': 1,
        'incr/': 1,
        'del/': 1,
      });
    } finally {
      await redis.close();
    }
  });
});

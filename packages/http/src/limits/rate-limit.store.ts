import { createRequire } from 'node:module';
import type { FastifyRateLimitOptions, FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import { AppError, type Redis } from '@ingest/platform';

type Callback = (error: Error | null, result?: { current: number; ttl: number }) => void;
interface PluginRedisStore {
  incr(key: string, callback: Callback, timeWindow: number, max: number): void;
  read(key: string, callback: Callback, timeWindow: number, max: number): void;
  child(routeOptions: Parameters<FastifyRateLimitStore['child']>[0]): PluginRedisStore;
}
type PluginRedisStoreCtor = new (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key: string) => PluginRedisStore;

// The plugin's own Redis store (its Lua script and key layout); it ships no types of its own.
const RedisStore = createRequire(import.meta.url)('@fastify/rate-limit/store/RedisStore.js') as PluginRedisStoreCtor;

/**
 * The rate limiter's Redis store, with its failures told apart: an error of Redis becomes a
 * retryable `redis_unavailable` AppError, which the error handler answers with 503 (instead of
 * a 500) when the limiter fails closed (RATE_LIMIT_FAIL_OPEN=false); failing open, the plugin
 * skips it. Everything else is the plugin's store unchanged.
 */
export function rateLimitStore(redis: Redis, nameSpace: string): FastifyRateLimitStoreCtor {
  const wrap = (inner: PluginRedisStore): FastifyRateLimitStore & { read: PluginRedisStore['read'] } => {
    const guarded =
      (method: 'incr' | 'read') =>
      (key: string, callback: Callback, timeWindow: number, max: number): void => {
        inner[method](
          key,
          (error, result) =>
            error
              ? callback(new AppError('redis_unavailable', `the rate limit could not be checked: ${error.message}`, { retryable: true, cause: error }))
              : callback(null, result),
          timeWindow,
          max,
        );
      };
    return { incr: guarded('incr'), read: guarded('read'), child: (routeOptions) => wrap(inner.child(routeOptions)) };
  };
  return class {
    constructor(options: FastifyRateLimitOptions & { continueExceeding?: boolean; exponentialBackoff?: boolean }) {
      return wrap(new RedisStore(options.continueExceeding ?? false, options.exponentialBackoff ?? false, redis, nameSpace));
    }
  } as unknown as FastifyRateLimitStoreCtor;
}

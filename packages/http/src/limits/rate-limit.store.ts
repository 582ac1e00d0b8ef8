import { createRequire } from 'node:module';
import type { FastifyRateLimitOptions, FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import { AppError, nameRedisScript, type Redis } from '@ingest/platform';

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
 * The plugin's store loads its scripts with ioredis's defineCommand; their SHA1s are named here
 * so that the per-address limit shows as such in ingest_redis_command_duration_seconds.
 * `scriptsSet` is ioredis's own record of defined commands (not a typed API: if it ever moves,
 * the calls are labelled `unknown`, and redis-roles.integration.test.ts says so).
 */
function nameLibraryScripts(redis: Redis): void {
  const defined = (redis as unknown as { scriptsSet?: Record<string, { sha?: string }> }).scriptsSet;
  for (const [command, label] of [
    ['rateLimit', 'rate_limit_address'],
    ['rateLimitRead', 'rate_limit_address_read'],
  ] as const) {
    const sha = defined?.[command]?.sha;
    if (sha) nameRedisScript(sha, label);
  }
}

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
      const store = new RedisStore(options.continueExceeding ?? false, options.exponentialBackoff ?? false, redis, nameSpace);
      nameLibraryScripts(redis);
      return wrap(store);
    }
  } as unknown as FastifyRateLimitStoreCtor;
}

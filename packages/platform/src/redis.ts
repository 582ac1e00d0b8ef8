import { once } from 'node:events';
import { Redis } from 'ioredis';
import { AppError } from './errors.js';
import type { Closeable } from './lifecycle.js';
import type { Logger } from './logger.js';

export type { Redis };

export interface RedisOptions {
  url: string;
  /** Fail a command after this long instead of queueing it while Redis is away. */
  commandTimeoutMs?: number;
  /**
   * While the connection is down, fail commands at once instead of queueing them until a
   * reconnect (up to a few seconds each): for request paths (the gateway), so a request that
   * needs Redis is answered 503 at once. Call connect() before the first command.
   */
  failFast?: boolean;
  /** Connection errors are logged here (at most one line per 10 s), not printed by ioredis. */
  logger?: Logger;
}

const ERROR_LOG_INTERVAL_MS = 10_000;

export function createRedis(options: RedisOptions): Redis & Closeable {
  const redis = new Redis(options.url, {
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    enableOfflineQueue: !options.failFast,
    commandTimeout: options.commandTimeoutMs ?? 2_000,
    connectTimeout: 3_000,
  });
  // Without a listener ioredis prints every failed reconnect to the console, unstructured.
  let lastLoggedMs = 0;
  redis.on('error', (err: Error) => {
    const now = Date.now();
    if (now - lastLoggedMs < ERROR_LOG_INTERVAL_MS) return;
    lastLoggedMs = now;
    options.logger?.warn({ err }, 'redis connection error (further ones within 10 s are not logged)');
  });
  return Object.assign(redis, {
    // quit() resolves on the server's OK, before the socket is gone; waiting for 'end' means a
    // closed client really holds no connection (clean shutdown, no open handles in tests).
    close: async () => {
      if (redis.status === 'end' || redis.status === 'wait') return;
      const ended = once(redis, 'end');
      await redis.quit().catch(() => redis.disconnect());
      await ended;
    },
  }) as Redis & Closeable;
}

/**
 * A Redis command of `what` that failed (Redis unreachable, a timeout, the retries spent) as a
 * retryable `redis_unavailable` AppError: the HTTP error handler answers it with 503 and
 * Retry-After, never with a 500. Use it where a feature fails closed without Redis.
 */
export async function withRedis<T>(what: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw new AppError('redis_unavailable', `${what}: Redis is unavailable (${err instanceof Error ? err.message : String(err)})`, {
      retryable: true,
      cause: err,
    });
  }
}

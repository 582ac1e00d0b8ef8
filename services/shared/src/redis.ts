import { once } from 'node:events';
import { Redis } from 'ioredis';
import type { Closeable } from './lifecycle.js';

export type { Redis };

export interface RedisOptions {
  url: string;
  /** Fail a command after this long instead of queueing it while Redis is away. */
  commandTimeoutMs?: number;
}

export function createRedis(options: RedisOptions): Redis & Closeable {
  const redis = new Redis(options.url, {
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    enableOfflineQueue: true,
    commandTimeout: options.commandTimeoutMs ?? 2_000,
    connectTimeout: 3_000,
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

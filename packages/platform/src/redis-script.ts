import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export type RedisArg = string | number | Buffer;

/**
 * A Lua script called by its SHA1 (EVALSHA): the text travels and is hashed by Redis only when
 * the server does not know it yet (after a restart or SCRIPT FLUSH), instead of on every call.
 */
export function redisScript(lua: string): (redis: Redis, keys: readonly string[], args: readonly RedisArg[]) => Promise<unknown> {
  const sha = createHash('sha1').update(lua).digest('hex');
  return async (redis, keys, args) => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}

import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

export type RedisArg = string | number | Buffer;

/** Script names by SHA1, for the command timings (redis.ts): an EVALSHA is labelled with its script's name. */
const namesBySha = new Map<string, string>();

/** The name a script was registered under (redisScript, nameRedisScript); undefined for any other SHA1. */
export function redisScriptName(sha: string): string | undefined {
  return namesBySha.get(sha);
}

/**
 * Names a script some library loads itself (its SHA1), so its calls are labelled too. Two scripts
 * of the same text are one script to Redis: the first name given labels both.
 */
export function nameRedisScript(sha: string, name: string): void {
  if (!namesBySha.has(sha)) namesBySha.set(sha, name);
}

/**
 * A Lua script called by its SHA1 (EVALSHA): the text travels and is hashed by Redis only when
 * the server does not know it yet (after a restart or SCRIPT FLUSH), instead of on every call.
 * `name` labels its calls in `ingest_redis_command_duration_seconds` (few, fixed names: a label).
 */
export function redisScript(lua: string, name = 'unnamed'): (redis: Redis, keys: readonly string[], args: readonly RedisArg[]) => Promise<unknown> {
  const sha = createHash('sha1').update(lua).digest('hex');
  nameRedisScript(sha, name);
  return async (redis, keys, args) => {
    try {
      return await redis.evalsha(sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      return redis.eval(lua, keys.length, ...keys, ...args);
    }
  };
}

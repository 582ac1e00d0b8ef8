import { type Logger, type Redis, withRedis } from '@ingest/platform';

/**
 * "Last used" of API keys for the dashboard. Recording must not slow ingestion: each replica
 * writes a key's timestamp to Redis at most once a minute (fire and forget), so the value is
 * accurate to about a minute, which is all a "last used" column needs.
 */
export interface KeyLastUsedStore {
  touched(keyId: string): void;
  lastUsed(keyIds: readonly string[]): Promise<Map<string, string>>;
}

const WRITE_EVERY_MS = 60_000;
const KEEP_SECONDS = 400 * 24 * 3600;
/** Bounds the memory of the throttle; past it, stale entries are dropped. */
const MAX_REMEMBERED = 10_000;

export function keyLastUsedKey(keyId: string, prefix = ''): string {
  return `${prefix}apikey:last-used:${keyId}`;
}

export function createKeyLastUsedStore(deps: { redis: Redis; logger: Logger; keyPrefix?: string; now?: () => number }): KeyLastUsedStore {
  const now = deps.now ?? Date.now;
  const lastWrite = new Map<string, number>();
  return {
    touched(keyId) {
      const at = now();
      const previous = lastWrite.get(keyId);
      if (previous !== undefined && at - previous < WRITE_EVERY_MS) return;
      if (lastWrite.size >= MAX_REMEMBERED) {
        for (const [id, t] of lastWrite) if (at - t >= WRITE_EVERY_MS) lastWrite.delete(id);
      }
      lastWrite.set(keyId, at);
      deps.redis.set(keyLastUsedKey(keyId, deps.keyPrefix), new Date(at).toISOString(), 'EX', KEEP_SECONDS).catch((err: unknown) => {
        lastWrite.delete(keyId);
        deps.logger.warn({ err, keyId }, 'could not record api key use');
      });
    },
    async lastUsed(keyIds) {
      if (keyIds.length === 0) return new Map();
      const values = await withRedis('api key last use', deps.redis.mget(...keyIds.map((id) => keyLastUsedKey(id, deps.keyPrefix))));
      const out = new Map<string, string>();
      keyIds.forEach((id, i) => {
        const v = values[i];
        if (v) out.set(id, v);
      });
      return out;
    },
  };
}

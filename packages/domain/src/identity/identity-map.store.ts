import { AppError, type Redis, redisScript } from '@ingest/platform';
import { decodeIdentityEntry, encodeIdentityEntry, type IdentityEntry, type PersonRef } from './identity-record.js';

/**
 * The Redis index of the identity map (the topic `identities` is the durable copy): one hash per
 * account, `identity:map:{<accountId>}`, field the person (`u:<userId>` / `a:<anonymousId>`),
 * value the entry as on the topic. Lookups are HMGETs of a batch's people; no process holds the
 * map in memory, so memory does not grow with the number of people.
 *
 * `identity:built` says the index holds the topic: it is set after a rebuild
 * (identity-map.rebuild.ts) and lost with the rest when Redis loses its data, which is what
 * makes the processor rebuild (docs/segment.md, "The identity map").
 */
export interface IdentityMapIndex {
  get(accountId: string, refs: readonly PersonRef[]): Promise<Map<PersonRef, IdentityEntry>>;
  /** Keeps the newest of each (by `updatedAt`): a rebuild replaying old records never undoes a newer write. */
  put(accountId: string, entries: readonly (readonly [PersonRef, IdentityEntry])[]): Promise<void>;
  remove(accountId: string, refs: readonly PersonRef[]): Promise<number>;
  /** Every entry of the account, a page at a time (HSCAN: bounded memory). */
  scan(accountId: string, visit: (ref: PersonRef, entry: IdentityEntry) => void): Promise<void>;
  isBuilt(): Promise<boolean>;
  markBuilt(): Promise<void>;
}

// KEYS: the hash. ARGV: field, value, updatedAt, field, value, updatedAt, ...
const PUT_NEWEST = redisScript(
  `
for i = 1, #ARGV, 3 do
  local current = redis.call('HGET', KEYS[1], ARGV[i])
  local keep = false
  if current then
    local ok, decoded = pcall(cjson.decode, current)
    if ok and type(decoded) == 'table' and tonumber(decoded.updatedAt) and tonumber(decoded.updatedAt) > tonumber(ARGV[i + 2]) then keep = true end
  end
  if not keep then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
return 1
`,
  'identity_map_put_newest',
);

export function identityMapKeys(keyPrefix = '') {
  return {
    map: (accountId: string) => `${keyPrefix}identity:map:{${encodeURIComponent(accountId)}}`,
    built: `${keyPrefix}identity:built`,
  };
}

function unavailable(what: string, err: unknown): AppError {
  // ioredis errors carry the command's arguments (emails): only the message travels.
  return new AppError('identity_map_unavailable', `${what}: ${err instanceof Error ? err.message : String(err)}`, { retryable: true });
}

export function createIdentityMapIndex(options: { redis: Redis; keyPrefix?: string }): IdentityMapIndex {
  const { redis } = options;
  const keys = identityMapKeys(options.keyPrefix);
  return {
    async get(accountId, refs) {
      const found = new Map<PersonRef, IdentityEntry>();
      if (refs.length === 0) return found;
      let values: (string | null)[];
      try {
        values = await redis.hmget(keys.map(accountId), ...refs);
      } catch (err) {
        throw unavailable('reading the identity map', err);
      }
      refs.forEach((ref, i) => {
        const entry = decodeIdentityEntry(values[i]);
        if (entry) found.set(ref, entry);
      });
      return found;
    },
    async put(accountId, entries) {
      if (entries.length === 0) return;
      const args = entries.flatMap(([ref, entry]) => [ref, encodeIdentityEntry(entry), String(entry.updatedAt)]);
      try {
        await PUT_NEWEST(redis, [keys.map(accountId)], args);
      } catch (err) {
        throw unavailable('writing the identity map', err);
      }
    },
    async remove(accountId, refs) {
      if (refs.length === 0) return 0;
      try {
        return await redis.hdel(keys.map(accountId), ...refs);
      } catch (err) {
        throw unavailable('removing from the identity map', err);
      }
    },
    async scan(accountId, visit) {
      let cursor = '0';
      try {
        do {
          const [next, flat] = await redis.hscan(keys.map(accountId), cursor, 'COUNT', 500);
          for (let i = 0; i + 1 < flat.length; i += 2) {
            const ref = flat[i] as PersonRef;
            const entry = decodeIdentityEntry(flat[i + 1]);
            if (entry) visit(ref, entry);
          }
          cursor = next;
        } while (cursor !== '0');
      } catch (err) {
        throw unavailable('scanning the identity map', err);
      }
    },
    async isBuilt() {
      try {
        return (await redis.exists(keys.built)) === 1;
      } catch (err) {
        throw unavailable('reading the identity map marker', err);
      }
    },
    async markBuilt() {
      try {
        await redis.set(keys.built, String(Date.now()));
      } catch (err) {
        throw unavailable('writing the identity map marker', err);
      }
    },
  };
}

import { createHash } from 'node:crypto';
import type { BulkJobReceipt } from '@ingest/schemas';
import { AppError, type Redis, redisScript } from '@ingest/platform';

/**
 * `Idempotency-Key` for job-creating requests (bulk and CSV): the first request with a key
 * creates the job; the same key with the same body within 24 hours answers that job's receipt
 * again and creates (and charges) nothing; the same key with another body is refused. The
 * record lives in Redis, so it holds across gateway replicas and restarts.
 *
 * A key is claimed (`pending`) for at most PENDING_TTL_S while its request writes the job; a
 * request that fails gives the key back, so the client's retry creates the job. A gateway that
 * dies mid-request leaves the claim to expire.
 */
export type IdempotencyClaim = { kind: 'claimed' } | { kind: 'replay'; receipt: BulkJobReceipt } | { kind: 'mismatch' } | { kind: 'in_progress' };

export interface IdempotencyRecord {
  state: 'pending' | 'done';
  fingerprint: string;
  receipt?: BulkJobReceipt;
}

export interface IdempotencyStore {
  /** The record of a key, without claiming it (a CSV upload's body is known only once read). */
  peek(accountId: string, key: string): Promise<IdempotencyRecord | undefined>;
  /** `fingerprint`: a digest of the request body (see `bodyFingerprint`). */
  claim(accountId: string, key: string, fingerprint: string): Promise<IdempotencyClaim>;
  /** The job was created: its receipt is what a repeat answers, for 24 hours. */
  complete(accountId: string, key: string, receipt: BulkJobReceipt): Promise<void>;
  /** The request failed: the key is free again. */
  release(accountId: string, key: string): Promise<void>;
}

export const IDEMPOTENCY_TTL_S = 24 * 3600;
const PENDING_TTL_S = 120;
/** What a key may be: printable ASCII, 1-255 characters (like an eventId). */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x21-\\x7E]{1,255}$';

// KEYS: record. ARGV: fingerprint, pending ttl. Returns {state, receipt?}.
const CLAIM = `
local f = redis.call('HGET', KEYS[1], 'f')
if not f then
  redis.call('HSET', KEYS[1], 'f', ARGV[1], 's', 'pending')
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return {'claimed'}
end
if f ~= ARGV[1] then return {'mismatch'} end
if redis.call('HGET', KEYS[1], 's') == 'done' then return {'replay', redis.call('HGET', KEYS[1], 'r')} end
return {'in_progress'}
`;
// KEYS: record. ARGV: receipt, ttl. Only a pending claim is completed.
const COMPLETE = `
if redis.call('HGET', KEYS[1], 's') ~= 'pending' then return 0 end
redis.call('HSET', KEYS[1], 's', 'done', 'r', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
`;
// KEYS: record. A completed record is never released.
const RELEASE = `
if redis.call('HGET', KEYS[1], 's') == 'pending' then return redis.call('DEL', KEYS[1]) end
return 0
`;

const claimScript = redisScript(CLAIM, 'idempotency_claim');
const completeScript = redisScript(COMPLETE, 'idempotency_complete');
const releaseScript = redisScript(RELEASE, 'idempotency_release');

export function bodyFingerprint(...parts: (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest('base64url');
}

export function createIdempotencyStore(deps: { redis: Redis; keyPrefix?: string }): IdempotencyStore {
  // The caller's key is hashed: its length and characters never shape our Redis keys.
  const recordKey = (accountId: string, key: string) => `${deps.keyPrefix ?? ''}idem:{${accountId}}:${bodyFingerprint(key)}`;

  async function guarded<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw new AppError('idempotency_unavailable', `idempotency record unavailable: ${(err as Error).message}`, { retryable: true, cause: err });
    }
  }

  return {
    peek: (accountId, key) =>
      guarded(async () => {
        const [fingerprint, state, receipt] = await deps.redis.hmget(recordKey(accountId, key), 'f', 's', 'r');
        if (!fingerprint) return undefined;
        return {
          state: state === 'done' ? 'done' : 'pending',
          fingerprint,
          ...(receipt ? { receipt: JSON.parse(receipt) as BulkJobReceipt } : {}),
        };
      }),
    claim: (accountId, key, fingerprint) =>
      guarded(async () => {
        const [state, receipt] = (await claimScript(deps.redis, [recordKey(accountId, key)], [fingerprint, PENDING_TTL_S])) as [string, string?];
        if (state === 'replay') return { kind: 'replay', receipt: JSON.parse(receipt ?? 'null') as BulkJobReceipt };
        return { kind: state as 'claimed' | 'mismatch' | 'in_progress' };
      }),
    complete: (accountId, key, receipt) =>
      guarded(async () => {
        await completeScript(deps.redis, [recordKey(accountId, key)], [JSON.stringify(receipt), IDEMPOTENCY_TTL_S]);
      }),
    release: (accountId, key) =>
      guarded(async () => {
        await releaseScript(deps.redis, [recordKey(accountId, key)], []);
      }),
  };
}

import { createHash } from 'node:crypto';

/**
 * How the allowance remembers the event ids it counted, so that a client's retry is free.
 *
 * Memory: an id is kept as a 64-bit fingerprint (the first 8 bytes of its MD5), stored as an
 * integer member of a Redis set. Small sets of integers are Redis "intsets": a sorted array of
 * 8-byte integers with no per-member allocation. Measured on Redis 7.0 (1 M ids): 9.3 bytes per
 * id, against ~100 for the whole ids in one hashtable set (36-character UUIDs) and 64-69 for
 * 8-byte binary members in one set. Redis keeps a set an intset only up to
 * `set-max-intset-entries` (512 by default), so an account's ids are spread over `shards` sets
 * sized from its plan: an account can have at most its monthly limit counted, so at most
 * limit/128 ids land in a shard on average (about 256 around a month boundary).
 *
 * Time: ids are remembered per 15-minute bucket and looked up in the current bucket only (one
 * SADD per id, whose answer says "new" or "seen"): an id counted in the last 5 minutes of a
 * bucket is also written to the next one. So every id is remembered for at least 5 and at most
 * 20 minutes. A repeat older than that is counted again until the usage reconciler corrects the
 * counter from ClickHouse's exact count.
 *
 * Collisions: two different ids share a fingerprint with odds of n²/2^65 for n ids remembered at
 * once by one account (about 10^-8 for 1 M): the second would be taken for a repeat and not
 * counted until the reconciler counts it.
 */
export const SEEN_BUCKET_MS = 15 * 60 * 1000;
/** In the last part of a bucket, ids are also written to the next bucket. */
export const SEEN_OVERLAP_MS = 5 * 60 * 1000;
/** Shards per bucket at most: 65,536 keeps ≤ 512 per shard up to ~30 M ids in a bucket. */
export const MAX_SEEN_SHARDS = 65_536;
const IDS_PER_SHARD = 128;

export interface SeenId {
  /** The set (of the bucket) the fingerprint belongs to. */
  shard: number;
  /** The fingerprint as a signed 64-bit decimal integer: what Redis stores in an intset. */
  member: string;
}

/** Shards per bucket for an account with this monthly limit: a power of two, 1 to 65,536. */
export function seenShards(monthlyLimit: number): number {
  let shards = 1;
  while (shards < MAX_SEEN_SHARDS && shards * IDS_PER_SHARD < monthlyLimit) shards *= 2;
  return shards;
}

export function seenId(eventId: string, shards: number): SeenId {
  const digest = createHash('md5').update(eventId).digest();
  // Bytes 0-7 are the fingerprint; bytes 8-11 pick the shard, independent of the stored bits.
  return { shard: digest.readUInt32BE(8) % shards, member: digest.readBigInt64BE(0).toString() };
}

export function seenBucket(atMs: number): { bucket: number; alsoNext: boolean } {
  const bucket = Math.floor(atMs / SEEN_BUCKET_MS);
  return { bucket, alsoNext: atMs - bucket * SEEN_BUCKET_MS >= SEEN_BUCKET_MS - SEEN_OVERLAP_MS };
}

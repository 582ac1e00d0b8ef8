import { createHmac, randomBytes } from 'node:crypto';
import siphash24 from 'siphash24';
import { AppError } from '@ingest/platform';
import { type TProperties, Type } from '@sinclair/typebox';

/**
 * How the allowance remembers the event ids it counted, so that a client's retry is free.
 *
 * Memory: an id is kept as a 64-bit integer derived from its keyed hash (SipHash-2-4 under a key
 * derived from SEEN_IDS_HMAC_KEY, below), a member of a Redis set.
 * Small sets of integers are Redis "intsets": a sorted array of 8-byte integers with no
 * per-member allocation. Measured on Redis 7.0 (500,000 ids): 9.9 bytes per id, against 89 for
 * the whole ids (36-character UUIDs) in one set and 64-69 for 8-byte binary members in one set.
 * Redis keeps a set an intset only up to `set-max-intset-entries` (512 by default), so an
 * account's ids are spread over `shards` sets sized from its plan: an account can have at most
 * its monthly limit counted, so at most limit/128 ids land in a shard on average (about twice
 * that around a month boundary).
 *
 * The integer is shard * 10^14 + (hash mod 10^14): the script takes the shard as the digits
 * before the last 14 (a substring) instead of a second argument per id or arithmetic and number
 * formatting in Lua. Measured (Redis 7.0, 100 ids per request): a second argument per id cost
 * 1.70 s of Redis CPU per 1 M ids, division and formatting 1.85, the substring 1.44, against
 * 2.2-2.4 for the whole ids. Two ids of one shard share a value with odds of n²/(2·10^14) for n
 * ids in the shard at once: about 2·10^-4 over all shards for 20 M ids remembered at once. The
 * second would be taken for a repeat and not counted until the reconciler counts it.
 *
 * Keyed, not a plain digest (issue 26): with MD5 anyone could compute colliding pairs of ids
 * offline (46 bits is a birthday search of about 2^23 ids per pair) and send batches in which
 * every second event is taken for a repeat of the first and left uncounted until the
 * reconciler's next round. With a secret key the member of an id cannot be computed outside the
 * service, so such pairs cannot be prepared; chance collisions keep the odds above. Every
 * replica that counts (gateways, consoles) must hold the same key, or a retry through another
 * replica is counted again until the reconciler corrects it (docs/security.md, rotation). The
 * same holds between versions that derive members differently (HMAC-SHA256 until 2026-11-29):
 * during a rolling upgrade across that change a retry is counted again at worst, never lost.
 *
 * Time: ids are remembered per 15-minute bucket. An id is looked up with one SADD in the current
 * bucket (its answer says new or seen); during a bucket's first 5 minutes an id new there is
 * also looked up in the previous bucket. So every id is remembered for at least 5 minutes, and
 * at most until the end of its bucket (15) or of the next one's first 5 minutes (20). A repeat
 * older than that is counted again until the allowance reconciler corrects the counter from
 * ClickHouse's exact count.
 */
export const SEEN_BUCKET_MS = 15 * 60 * 1000;
/** In the first part of a bucket, ids new there are also looked up in the previous bucket. */
export const SEEN_OVERLAP_MS = 5 * 60 * 1000;
/** Shards per bucket at most: 65,536 keeps ≤ 512 per shard up to ~30 M ids in a bucket. */
export const MAX_SEEN_SHARDS = 65_536;
const IDS_PER_SHARD = 128;

/** A member is shard * 10^14 + (the id's keyed hash mod 10^14): its decimal digits before the last 14 are its shard. */
const SHARD_UNIT = 1e14;

/** Shards per bucket for an account with this monthly limit: a power of two, 1 to 65,536. */
export function seenShards(monthlyLimit: number): number {
  let shards = 1;
  while (shards < MAX_SEEN_SHARDS && shards * IDS_PER_SHARD < monthlyLimit) shards *= 2;
  return shards;
}

/**
 * The id as a set member: a decimal integer below 2^63 (an intset member) whose digits before
 * the last 14 are its shard ('' for shard 0), so the script takes the shard as a substring.
 * `key` is the seen-ids key (seenIdsKey): without it nobody can tell which ids share a member.
 * The shard is the keyed hash's low 16 bits, the value its other 48 bits mod 10^14 (2^48 is 2.8
 * times 10^14, so some values are 3 of 2^48 and the rest 2: the odds that two ids share one are
 * 1.7 % above an even spread's).
 */
export function seenMember(key: Buffer, eventId: string, shards: number): string {
  const hash = keyedHash64(key, eventId);
  const low = hash.getUint32(0, true);
  const shard = (low & 0xffff) % shards;
  const value = (hash.getUint32(4, true) * 0x10000 + (low >>> 16)) % SHARD_UNIT;
  return shard === 0 ? String(value) : `${shard}${String(value).padStart(14, '0')}`;
}

const SIPHASH_KEY_BYTES = 16;
const sipKeys = new WeakMap<Buffer, Uint8Array>();
const hashOut = new Uint8Array(8);
const hashView = new DataView(hashOut.buffer);
let idBytes = Buffer.allocUnsafe(1024);

/**
 * SipHash-2-4 (a keyed 64-bit PRF made for exactly this: hash tables fed by callers) of the id's
 * UTF-8 bytes, under 128 bits derived from the seen-ids key by HMAC-SHA256 once per key. Every
 * counted event goes through here on the gateway's thread: the siphash24 package (WebAssembly)
 * takes 0.3-0.4 µs an id where HMAC-SHA256 took 6.3-6.9 µs even with its padded states copied
 * (Node 24, this 2-core machine, 200,000 UUIDs, 2026-11-29), 9.5 % of the gateway's CPU in the
 * bench profile. The answer is a view on one shared buffer, read before the next call.
 */
export function keyedHash64(key: Buffer, message: string): DataView {
  let sipKey = sipKeys.get(key);
  if (!sipKey) {
    sipKey = new Uint8Array(createHmac('sha256', key).update('seen-ids siphash-2-4').digest().subarray(0, SIPHASH_KEY_BYTES));
    sipKeys.set(key, sipKey);
  }
  if (message.length * 3 > idBytes.length) idBytes = Buffer.allocUnsafe(message.length * 3);
  const length = idBytes.write(message, 0, 'utf8');
  siphash24(idBytes.subarray(0, length), sipKey, hashOut, true);
  return hashView;
}

/** A seen-ids key is at least this long: 256 bits, like the other secrets of the service. */
export const MIN_SEEN_IDS_KEY_BYTES = 32;

/**
 * The key of the seen-id memory, for every service that counts events against the allowance
 * (the gateway, the console's test events and CSV uploads). The same on every replica; secret
 * (a Kubernetes Secret, never logged). Empty: a random key per process (see seenIdsKey).
 */
export const SeenIdsConfig = {
  SEEN_IDS_HMAC_KEY: Type.String({ default: '' }),
} satisfies TProperties;

/**
 * The key as bytes (the setting's UTF-8 bytes: `openssl rand -hex 32` gives 64), or a random one
 * when the setting is empty: still unpredictable, but each process then remembers ids apart, so
 * `generated` tells main.ts to warn.
 */
export function seenIdsKey(config: { SEEN_IDS_HMAC_KEY: string }, random: (size: number) => Buffer = randomBytes): { key: Buffer; generated: boolean } {
  if (config.SEEN_IDS_HMAC_KEY === '') return { key: random(32), generated: true };
  const key = Buffer.from(config.SEEN_IDS_HMAC_KEY, 'utf8');
  if (key.length < MIN_SEEN_IDS_KEY_BYTES) {
    throw new AppError(
      'invalid_config',
      `invalid configuration: SEEN_IDS_HMAC_KEY must be at least ${MIN_SEEN_IDS_KEY_BYTES} bytes (it has ${key.length}); e.g. openssl rand -hex 32`,
    );
  }
  return { key, generated: false };
}

/** What main.ts logs when SEEN_IDS_HMAC_KEY is empty. */
export const SEEN_IDS_KEY_GENERATED_WARNING =
  'SEEN_IDS_HMAC_KEY is empty: this process remembers counted event ids under a random key of its own, so a retry through another replica is counted again until the usage reconciler corrects it; set the same key on every gateway and console (docs/security.md)';

export function seenBucket(atMs: number): { bucket: number; checkPrevious: boolean } {
  const bucket = Math.floor(atMs / SEEN_BUCKET_MS);
  return { bucket, checkPrevious: atMs - bucket * SEEN_BUCKET_MS < SEEN_OVERLAP_MS };
}

import { randomBytes } from 'node:crypto';
import { AppError, type ConsumedMessage, type Redis, redisScript } from '@ingest/platform';

/**
 * The parked events of blocked accounts, in Redis (docs/crm-sync.md, "Isolation"). Per account a
 * list holds its parked events in the order they arrived, so a record's events resume in order;
 * a sorted set says when each parked account is due for its next try; a lease lets one replica
 * at a time resume an account. Caps per account and in total bound what one tenant can make us
 * hold: an event beyond them is refused (the caller dead-letters it), and so is every later one
 * of that batch, so what is parked stays in order.
 *
 * All keys share one Redis Cluster hash tag, so each script is atomic over the list, the
 * account's counters, the schedule and the totals. The price is that parked events live on one
 * cluster node; the total caps keep that bounded.
 */
export interface ParkedEntry {
  /** The Kafka message the event came in, as it was (value = the event record's JSON). */
  message: ConsumedMessage;
  /** When it was parked (epoch ms); past CRM_PARK_MAX_AGE_MS it is dead-lettered. */
  parkedAtMs: number;
}

export interface ParkLimits {
  maxEventsPerAccount: number;
  maxBytesPerAccount: number;
  maxEventsTotal: number;
  maxBytesTotal: number;
}

export interface ParkResult {
  /** False: the account had nothing parked (and `force` was not set): nothing was written. */
  parked: boolean;
  /** How many of the entries, from the first, were parked; the rest hit a cap. */
  accepted: number;
}

export interface ParkedChunk {
  /** With their encoded sizes, for the byte counters when they are removed. */
  entries: (ParkedEntry & { bytes: number })[];
  /** Tries since the account was parked. */
  attempts: number;
  /** When the account was last found suspended (`hold`), 0 if never: its events do not age while suspended. */
  heldAtMs: number;
}

export interface ParkStore {
  /**
   * Appends the entries behind the account's parked events. Without `force`, only when the
   * account has parked events (so its new events stay behind them); with `force` (the account was
   * just found blocked) always, and the account is due again at `dueAtMs`.
   */
  park(accountId: string, entries: readonly ParkedEntry[], options: { force: boolean; dueAtMs?: number; reason?: string }): Promise<ParkResult>;
  /** The first `count` parked events of an account, oldest first; they stay until `remove`. */
  peek(accountId: string, count: number): Promise<ParkedChunk>;
  /** Removes the first `count` events (resumed or dead-lettered); an account left empty is no longer parked. */
  remove(accountId: string, count: number, bytes: number): Promise<void>;
  /** Still blocked: try again at `dueAtMs`. */
  reschedule(accountId: string, dueAtMs: number, reason: string): Promise<void>;
  /**
   * The account is suspended: look again at `dueAtMs`. Not a try (attempts back to 0, so its
   * backoff starts afresh once resumed), and `nowMs` is kept as `heldAtMs`.
   */
  hold(accountId: string, dueAtMs: number, nowMs: number, reason?: string): Promise<void>;
  /** Accounts due for a try at `nowMs`, earliest first. */
  due(nowMs: number, limit: number): Promise<string[]>;
  /** Accounts with parked events, and parked events and bytes in total. */
  totals(): Promise<{ accounts: number; events: number; bytes: number }>;
  /** The account's resume lease for `ttlMs`, or undefined when another replica holds it. */
  lease(accountId: string, ttlMs: number): Promise<Lease | undefined>;
}

export interface Lease {
  /** False when the lease was lost (expired and taken): stop resuming. */
  renew(): Promise<boolean>;
  release(): Promise<void>;
}

interface StoredEntry {
  k: string | null;
  v: string;
  t: string;
  p: number;
  o: string;
  h: Record<string, string>;
  ts: number;
  at: number;
}

// KEYS: list, account meta, due zset, totals. ARGV: account, force, dueAt, reason, 4 limits, then entries.
const PARK = redisScript(
  `
local len = redis.call('LLEN', KEYS[1])
if ARGV[2] == '0' and len == 0 then return {0, 0} end
local bytes = tonumber(redis.call('HGET', KEYS[2], 'bytes') or '0')
local tcount = tonumber(redis.call('HGET', KEYS[4], 'events') or '0')
local tbytes = tonumber(redis.call('HGET', KEYS[4], 'bytes') or '0')
local maxEvents, maxBytes, maxTotal, maxTotalBytes = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local accepted = 0
for i = 9, #ARGV do
  local size = #ARGV[i]
  if len + 1 > maxEvents or bytes + size > maxBytes or tcount + 1 > maxTotal or tbytes + size > maxTotalBytes then break end
  redis.call('RPUSH', KEYS[1], ARGV[i])
  len = len + 1
  bytes = bytes + size
  tcount = tcount + 1
  tbytes = tbytes + size
  accepted = accepted + 1
end
redis.call('HSET', KEYS[2], 'bytes', bytes)
redis.call('HSET', KEYS[4], 'events', tcount, 'bytes', tbytes)
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[2], 'reason', ARGV[4])
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
elseif redis.call('ZSCORE', KEYS[3], ARGV[1]) == false then
  redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
end
if len == 0 then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
return {1, accepted}
`,
  'crm_park',
);

// KEYS: list, meta, due, totals. ARGV: account, count, bytes.
const REMOVE = redisScript(
  `
local n = math.min(tonumber(ARGV[2]), redis.call('LLEN', KEYS[1]))
redis.call('LTRIM', KEYS[1], n, -1)
redis.call('HINCRBY', KEYS[2], 'bytes', -tonumber(ARGV[3]))
redis.call('HINCRBY', KEYS[4], 'events', -n)
redis.call('HINCRBY', KEYS[4], 'bytes', -tonumber(ARGV[3]))
if redis.call('LLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
end
return n
`,
  'crm_park_remove',
);

/** The start of RESCHEDULE and HOLD: an account with nothing parked any more is forgotten, not rescheduled. */
const FORGET_IF_EMPTY = `
if redis.call('LLEN', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[2])
  redis.call('ZREM', KEYS[3], ARGV[1])
  return 0
end`;

// KEYS: list, meta, due. ARGV: account, dueAt, reason.
const RESCHEDULE = redisScript(
  `${FORGET_IF_EMPTY}
redis.call('HINCRBY', KEYS[2], 'attempts', 1)
redis.call('HSET', KEYS[2], 'reason', ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return 1
`,
  'crm_park_reschedule',
);

// KEYS: list, meta, due. ARGV: account, dueAt, now, reason.
const HOLD = redisScript(
  `${FORGET_IF_EMPTY}
redis.call('HSET', KEYS[2], 'attempts', 0, 'reason', ARGV[4], 'heldAt', ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
return 1
`,
  'crm_park_hold',
);

const RENEW = redisScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`, 'crm_park_lease_renew');
const RELEASE = redisScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`, 'crm_park_lease_release');

function encode(entry: ParkedEntry): string {
  const { message } = entry;
  const stored: StoredEntry = {
    k: message.key === null ? null : message.key.toString('utf8'),
    v: message.value?.toString('utf8') ?? '',
    t: message.topic,
    p: message.partition,
    o: message.offset,
    h: message.headers,
    ts: message.timestamp,
    at: entry.parkedAtMs,
  };
  return JSON.stringify(stored);
}

function decode(raw: string): ParkedEntry {
  const s = JSON.parse(raw) as StoredEntry;
  return {
    message: {
      topic: s.t,
      partition: s.p,
      offset: s.o,
      key: s.k === null ? null : Buffer.from(s.k, 'utf8'),
      value: Buffer.from(s.v, 'utf8'),
      headers: s.h,
      timestamp: s.ts,
    },
    parkedAtMs: s.at,
  };
}

function unavailable(what: string, err: unknown): AppError {
  // ioredis errors carry the command's arguments (event contents): only the message travels.
  return new AppError('crm_park_unavailable', `${what}: ${err instanceof Error ? err.message : String(err)}`, { retryable: true });
}

export function createParkStore(options: { redis: Redis; keyPrefix?: string; limits: ParkLimits }): ParkStore {
  const { redis, limits } = options;
  const tag = `${options.keyPrefix ?? ''}crm:park:{parked}`;
  const id = (accountId: string) => encodeURIComponent(accountId);
  const keys = (accountId: string) => [`${tag}:list:${id(accountId)}`, `${tag}:meta:${id(accountId)}`, `${tag}:due`, `${tag}:totals`];

  async function guarded<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw unavailable(what, err);
    }
  }

  return {
    park: (accountId, entries, parkOptions) =>
      guarded('parking events failed', async () => {
        const [parked, accepted] = (await PARK(redis, keys(accountId), [
          accountId,
          parkOptions.force ? '1' : '0',
          parkOptions.dueAtMs ?? Date.now(),
          parkOptions.reason ?? '',
          limits.maxEventsPerAccount,
          limits.maxBytesPerAccount,
          limits.maxEventsTotal,
          limits.maxBytesTotal,
          ...entries.map(encode),
        ])) as [number, number];
        return { parked: parked === 1, accepted };
      }),
    peek: (accountId, count) =>
      guarded('reading parked events failed', async () => {
        const [list, meta] = keys(accountId) as [string, string];
        const [raws, [attempts, heldAt]] = await Promise.all([redis.lrange(list, 0, count - 1), redis.hmget(meta, 'attempts', 'heldAt')]);
        return {
          entries: raws.map((raw) => ({ ...decode(raw), bytes: Buffer.byteLength(raw, 'utf8') })),
          attempts: Number(attempts ?? 0),
          heldAtMs: Number(heldAt ?? 0),
        };
      }),
    remove: (accountId, count, bytes) =>
      guarded('removing parked events failed', async () => {
        await REMOVE(redis, keys(accountId), [accountId, count, bytes]);
      }),
    reschedule: (accountId, dueAtMs, reason) =>
      guarded('rescheduling a parked account failed', async () => {
        await RESCHEDULE(redis, keys(accountId).slice(0, 3), [accountId, dueAtMs, reason]);
      }),
    hold: (accountId, dueAtMs, nowMs, reason = 'account_suspended') =>
      guarded('holding a suspended account failed', async () => {
        await HOLD(redis, keys(accountId).slice(0, 3), [accountId, dueAtMs, nowMs, reason]);
      }),
    due: (nowMs, limit) => guarded('reading due accounts failed', () => redis.zrangebyscore(`${tag}:due`, '-inf', nowMs, 'LIMIT', 0, limit)),
    totals: () =>
      guarded('reading park totals failed', async () => {
        const [accounts, totals] = await Promise.all([redis.zcard(`${tag}:due`), redis.hmget(`${tag}:totals`, 'events', 'bytes')]);
        return { accounts, events: Number(totals[0] ?? 0), bytes: Number(totals[1] ?? 0) };
      }),
    lease: (accountId, ttlMs) =>
      guarded('taking a resume lease failed', async () => {
        const key = `${tag}:lease:${id(accountId)}`;
        const token = randomBytes(16).toString('hex');
        if ((await redis.set(key, token, 'PX', ttlMs, 'NX')) !== 'OK') return undefined;
        return {
          renew: async () => Number(await RENEW(redis, [key], [token, ttlMs])) === 1,
          release: async () => {
            await RELEASE(redis, [key], [token]);
          },
        };
      }),
  };
}

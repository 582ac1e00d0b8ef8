import { AppError, type ConsumedMessage, type Redis, redisScript } from '@ingest/platform';

/**
 * Events whose person the identity map does not know yet, waiting for their `identify`
 * (docs/segment.md, "Late identify"). In Redis, one slot (`{w}`): a sorted set of the waiting
 * events by next look, a hash of the events (the Kafka message, as the park keeps it), and a hash
 * of counts per account that bounds each account (IDENTITY_WAIT_MAX_PER_ACCOUNT). No process
 * holds them in memory; each poll claims a bounded page.
 */
export interface WaitingEvent {
  accountId: string;
  eventId: string;
  message: ConsumedMessage;
  /** Epoch ms after which it stops waiting and is skipped `identity_unresolved`. */
  deadlineMs: number;
}

export interface IdentityWaitStore {
  /** false: the account already has its maximum waiting (the event is not added). Adding twice is one entry. */
  add(event: WaitingEvent, maxPerAccount: number): Promise<boolean>;
  /** Up to `count` due events, each hidden from other claims for `leaseMs`. */
  claim(nowMs: number, count: number, leaseMs: number): Promise<WaitingEvent[]>;
  /** Looks at it again at `atMs`. */
  later(event: Pick<WaitingEvent, 'accountId' | 'eventId'>, atMs: number): Promise<void>;
  remove(event: Pick<WaitingEvent, 'accountId' | 'eventId'>): Promise<void>;
  waiting(accountId: string): Promise<number>;
}

const VERSION = 1;
interface Stored {
  v: number;
  a: string;
  e: string;
  k: string | null;
  val: string;
  t: string;
  p: number;
  o: string;
  h: Record<string, string>;
  ts: number;
  d: number;
}

// KEYS: due, events, counts. ARGV: member, value, score, account, max.
const ADD = redisScript(
  `
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 1 end
if tonumber(redis.call('HGET', KEYS[3], ARGV[4]) or '0') >= tonumber(ARGV[5]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[3], ARGV[4], 1)
return 1
`,
  'crm_identity_wait_add',
);
// KEYS: due, events. ARGV: now, count, leased until.
const CLAIM = redisScript(
  `
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, m in ipairs(members) do
  redis.call('ZADD', KEYS[1], ARGV[3], m)
  local v = redis.call('HGET', KEYS[2], m)
  if v then table.insert(out, v) else redis.call('ZREM', KEYS[1], m) end
end
return out
`,
  'crm_identity_wait_claim',
);
// KEYS: due, events, counts. ARGV: member, account.
const REMOVE = redisScript(
  `
if redis.call('HDEL', KEYS[2], ARGV[1]) == 1 then
  redis.call('ZREM', KEYS[1], ARGV[1])
  if redis.call('HINCRBY', KEYS[3], ARGV[2], -1) <= 0 then redis.call('HDEL', KEYS[3], ARGV[2]) end
end
return 1
`,
  'crm_identity_wait_remove',
);

const memberOf = (e: Pick<WaitingEvent, 'accountId' | 'eventId'>) => `${e.accountId}\n${e.eventId}`;

function encode(e: WaitingEvent): string {
  const m = e.message;
  const stored: Stored = {
    v: VERSION,
    a: e.accountId,
    e: e.eventId,
    k: m.key === null ? null : m.key.toString('utf8'),
    val: m.value?.toString('utf8') ?? '',
    t: m.topic,
    p: m.partition,
    o: m.offset,
    h: m.headers,
    ts: m.timestamp,
    d: e.deadlineMs,
  };
  return JSON.stringify(stored);
}

function decode(raw: string): WaitingEvent | undefined {
  const s = JSON.parse(raw) as Stored;
  if (s.v !== VERSION) return undefined;
  return {
    accountId: s.a,
    eventId: s.e,
    deadlineMs: s.d,
    message: {
      topic: s.t,
      partition: s.p,
      offset: s.o,
      key: s.k === null ? null : Buffer.from(s.k, 'utf8'),
      value: Buffer.from(s.val, 'utf8'),
      headers: s.h,
      timestamp: s.ts,
    },
  };
}

function unavailable(what: string, err: unknown): AppError {
  return new AppError('identity_wait_unavailable', `${what}: ${err instanceof Error ? err.message : String(err)}`, { retryable: true });
}

export function createIdentityWaitStore(options: { redis: Redis; keyPrefix?: string }): IdentityWaitStore {
  const { redis } = options;
  const base = `${options.keyPrefix ?? ''}crm:identity-wait:{w}`;
  const keys = [`${base}:due`, `${base}:events`, `${base}:counts`];
  const guard = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (err) {
      throw unavailable(what, err);
    }
  };
  return {
    add: (event, max) =>
      guard(
        'adding a waiting event',
        async () => (await ADD(redis, keys, [memberOf(event), encode(event), String(Date.now()), event.accountId, String(max)])) === 1,
      ),
    claim: (nowMs, count, leaseMs) =>
      guard('claiming waiting events', async () => {
        const raw = (await CLAIM(redis, keys.slice(0, 2), [String(nowMs), String(count), String(nowMs + leaseMs)])) as string[];
        return raw.flatMap((r) => decode(r) ?? []);
      }),
    later: (event, atMs) =>
      guard('rescheduling a waiting event', async () => {
        await redis.zadd(keys[0] as string, 'XX', atMs, memberOf(event));
      }),
    remove: (event) =>
      guard('removing a waiting event', async () => {
        await REMOVE(redis, keys, [memberOf(event), event.accountId]);
      }),
    waiting: (accountId) => guard('counting waiting events', async () => Number((await redis.hget(keys[2] as string, accountId)) ?? 0)),
  };
}

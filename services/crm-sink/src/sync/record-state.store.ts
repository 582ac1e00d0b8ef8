import { AppError, type Redis } from '@ingest/platform';
import {
  type CrmObject,
  createRecordStateReader,
  type RecordState,
  type RecordStateReader,
  recordStateKeys,
  type StateDelta,
  withoutArguments,
} from '@ingest/domain';

/**
 * Redis side of the exactly-once effect: per (account, object, key) a hash of the fields the
 * sink owns, and per (account, eventId, ruleId) a ledger key. One script per event-rule applies
 * its delta and sets its ledger key atomically, or changes nothing when the key exists, so a
 * redelivered or replayed event never increments or appends twice.
 *
 * `set` fields are last-writer-wins registers ordered by event time: the hash keeps, per field,
 * `t:<field>` = `<event time ms>|<eventId>` of the set that last won, and a set wins only when
 * its (time, eventId) is not older. That comparison needs no ledger — a replay of the winner wins
 * again (same value), a replay or late arrival of an older event loses — so set-only rules set
 * no ledger key, and the outcome does not depend on the order events arrive in.
 */
export interface RecordStateStore extends Pick<RecordStateReader, 'present' | 'activitiesDone'> {
  /** Seeds absent fields, applies the delta once per ledger key; returns the hash afterwards. */
  apply(
    accountId: string,
    object: CrmObject,
    key: string,
    ledgerKey: string,
    seeds: StateDelta,
    delta: StateDelta,
  ): Promise<{ applied: boolean; state: RecordState }>;
  markActivitiesDone(ledgerKeys: readonly string[]): Promise<void>;
}

// The dry-run (@ingest/domain sync.preview.ts, simulateApply) mirrors this script in memory; change both together.
// KEYS: state hash, ledger key. ARGV: ledger ttl s, state ttl s, then kind/field/value triples ('set' values are `<ms>|<eventId>`).
// HGET of a missing field is false in Lua, not nil. Numbers are written with %.17g: Lua's tostring would turn epoch milliseconds into 1.73e+12.
// List items arrive JSON-encoded and are spliced into the stored JSON array as text, so no
// number goes through cjson's 14-digit formatting.
const APPLY = `
local function parts(tag)
  local ts, id = string.match(tag, '^([^|]*)|(.*)$')
  return tonumber(ts), id
end
-- Byte order, not Lua's locale-dependent string comparison (Redis sets LC_COLLATE from the environment).
local function before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local effects = false
for i = 3, #ARGV, 3 do
  local kind, field, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if kind == 'set' then
    local stored = redis.call('HGET', KEYS[1], field)
    local wins = not stored
    if stored then
      local sts, sid = parts(stored)
      local vts, vid = parts(value)
      wins = sts == nil or vts > sts or (vts == sts and not before(vid, sid))
    end
    if wins then redis.call('HSET', KEYS[1], field, value) end
  elseif kind ~= 'seed' then
    effects = true
  end
end
local applied = 0
if effects and redis.call('EXISTS', KEYS[2]) == 0 then
  for i = 3, #ARGV, 3 do
    local kind, field, value = ARGV[i], ARGV[i + 1], ARGV[i + 2]
    if kind == 'seed' or kind == 'once' then
      redis.call('HSETNX', KEYS[1], field, value)
    elseif kind == 'inc' then
      local current = tonumber(redis.call('HGET', KEYS[1], field) or '0') or 0
      redis.call('HSET', KEYS[1], field, string.format('%.17g', current + tonumber(value)))
    elseif kind == 'max' or kind == 'min' then
      local raw = redis.call('HGET', KEYS[1], field)
      local current = nil
      if raw then current = tonumber(raw) end
      local v = tonumber(value)
      if current == nil or (kind == 'max' and v > current) or (kind == 'min' and v < current) then
        redis.call('HSET', KEYS[1], field, string.format('%.17g', v))
      end
    elseif kind == 'app' then
      local list = redis.call('HGET', KEYS[1], field)
      if not list or list == '[]' then list = '[' .. value .. ']' else list = string.sub(list, 1, -2) .. ',' .. value .. ']' end
      redis.call('HSET', KEYS[1], field, list)
    end
  end
  redis.call('SET', KEYS[2], '1', 'EX', ARGV[1])
  applied = 1
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return {applied, redis.call('HGETALL', KEYS[1])}
`;

export interface RecordStateStoreOptions {
  redis: Redis;
  keyPrefix?: string;
  /** How long an applied (account, eventId, rule) is remembered: longer than any redelivery or replay. */
  ledgerTtlSeconds: number;
  /** Idle state expires after this long; the next touch seeds it again from the CRM, which holds the last written values. */
  stateTtlSeconds: number;
}

export function createRecordStateStore(options: RecordStateStoreOptions): RecordStateStore {
  const { redis } = options;
  // Keys and reads are the shared ones the gateway's dry-run uses, so both see the same state.
  const keys = recordStateKeys(options.keyPrefix);
  const reader = createRecordStateReader({ redis, keyPrefix: options.keyPrefix });

  return {
    present: reader.present,
    activitiesDone: reader.activitiesDone,
    async apply(accountId, object, key, ledgerKey, seeds, delta) {
      const [applied, flat] = (await withoutArguments(
        redis.eval(APPLY, 2, keys.state(accountId, object, key), keys.ledger(ledgerKey), options.ledgerTtlSeconds, options.stateTtlSeconds, ...seeds, ...delta),
      )) as [number, string[]];
      const state: RecordState = {};
      for (let i = 0; i + 1 < flat.length; i += 2) state[flat[i] as string] = flat[i + 1] as string;
      return { applied: applied === 1, state };
    },
    async markActivitiesDone(ledgerKeys) {
      if (ledgerKeys.length === 0) return;
      const pipeline = redis.pipeline();
      for (const k of ledgerKeys) pipeline.set(keys.activity(k), '1', 'EX', options.ledgerTtlSeconds);
      const results = (await withoutArguments(pipeline.exec())) ?? [];
      const failed = results.find(([err]) => err !== null);
      if (failed) throw new AppError('crm_state_unavailable', `marking activities failed: ${failed[0]?.message ?? 'unknown'}`, { retryable: true });
    },
  };
}

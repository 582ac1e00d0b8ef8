/**
 * The allowance's Lua scripts: each runs atomically in Redis, so every gateway replica and the
 * processor see one consistent counter. Key layout: allowance.keys.ts; seen ids: seen-ids.ts.
 * Called by their SHA1 (redis-script.ts); EVAL of the whole text on every call cost about 10%
 * more Redis CPU.
 */

/**
 * KEYS: counter, hours, refused, seen registry.
 * ARGV: limit, ttl, hour, current bucket's shard prefix, previous bucket's shard prefix ('' after
 * the bucket's first minutes), current bucket, shards, then one member per id (seen-ids.ts;
 * '' for an id the service generated: it cannot repeat, so it is counted, not remembered).
 * Returns {used, decision...} with 0 = counted, 1 = repeat, 2 = over.
 *
 * The seen-id shards are changed with replication off (redis.set_repl): they are the memory of
 * recent ids that makes a retry free, not a record. Propagated, every remembered id was a SADD
 * appended to the append-only file and sent to each replica (about 100 bytes per id, and a
 * replica holding a copy it never reads); unpropagated, a Redis restart or failover forgets them,
 * and a retry after it is counted again until the allowance reconciler corrects the counter, the
 * same window as a retry older than the memory (docs/billing.md). The counter, the hours and the
 * refusals are propagated as before. Measured with the bench's allowance phase: see
 * docs/benchmarks.md.
 */
export const RESERVE_EVENTS = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local before = used
local limit = tonumber(ARGV[1])
local cur, prev = ARGV[4], ARGV[5]
local out = {}
local refused = 0
local remembered = false
local call, sub = redis.call, string.sub
redis.set_repl(redis.REPL_NONE)
for i = 8, #ARGV do
  local member = ARGV[i]
  local n = i - 7
  if member == '' then
    if used < limit then used = used + 1; out[n] = 0 else refused = refused + 1; out[n] = 2 end
  else
    local shard = sub(member, 1, -15)
    if call('SADD', cur .. shard, member) == 0 or (prev ~= '' and call('SISMEMBER', prev .. shard, member) == 1) then
      out[n] = 1
    elseif used < limit then
      used = used + 1
      remembered = true
      out[n] = 0
    else
      call('SREM', cur .. shard, member)
      refused = refused + 1
      out[n] = 2
    end
  end
end
redis.set_repl(redis.REPL_ALL)
if remembered and tonumber(redis.call('HGET', KEYS[4], ARGV[6]) or '0') < tonumber(ARGV[7]) then
  redis.call('HSET', KEYS[4], ARGV[6], ARGV[7])
  redis.call('EXPIRE', KEYS[4], ARGV[2])
end
if used > before then
  redis.call('SET', KEYS[1], used, 'EX', ARGV[2])
  redis.call('HINCRBY', KEYS[2], ARGV[3], used - before)
  redis.call('EXPIRE', KEYS[2], ARGV[2])
end
if refused > 0 then
  redis.call('INCRBY', KEYS[3], refused)
  redis.call('EXPIRE', KEYS[3], ARGV[2])
end
table.insert(out, 1, used)
return out
`;

/**
 * Gives back what a failed write had counted: the ids are forgotten (a retry counts them again;
 * the seen shards are not propagated, as in RESERVE_EVENTS).
 * KEYS: counter, hours. ARGV: hour, generated count, current bucket's shard prefix, members...
 * Returns what was given back.
 */
export const RELEASE_EVENTS = `
local total = tonumber(ARGV[2])
redis.set_repl(redis.REPL_NONE)
for i = 4, #ARGV do
  total = total + redis.call('SREM', ARGV[3] .. string.sub(ARGV[i], 1, -15), ARGV[i])
end
redis.set_repl(redis.REPL_ALL)
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if total > used then total = used end
if total > 0 then
  redis.call('DECRBY', KEYS[1], total)
  redis.call('HINCRBY', KEYS[2], ARGV[1], -total)
end
return total
`;

/**
 * Adds `count` to a job's pending reservation, all or nothing (a CSV upload reserves chunk by
 * chunk, a bulk request at once). KEYS: counter, hours, refused. ARGV: limit, count, ttl, job field.
 * Returns {granted (0/1), used}.
 */
export const RESERVE_JOB = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local count = tonumber(ARGV[2])
if used + count > tonumber(ARGV[1]) then
  redis.call('INCRBY', KEYS[3], count)
  redis.call('EXPIRE', KEYS[3], ARGV[3])
  return {0, used}
end
used = redis.call('INCRBY', KEYS[1], count)
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('HINCRBY', KEYS[2], ARGV[4], count)
redis.call('EXPIRE', KEYS[2], ARGV[3])
return {1, used}
`;

/**
 * A job ran (or never will): its pending reservation becomes what it accepted and the rest is
 * given back. The accepted count is filed under the hour of the settlement, not of the job's
 * receipt: the job's events (received_at = its receipt) may still be on their way to
 * ClickHouse, and a reconcile round only forgets hours that ended before it made sure the
 * pipeline had stored everything; an hour of receipt long past would be forgotten while they
 * are still in flight, and the counter would drop below what the account used. Filed under
 * the settlement's hour, they may be counted twice for up to an hour (here and in ClickHouse's
 * count of their hour of receipt), never zero times.
 * Idempotent: the reservation is gone after the first call.
 * KEYS: counter, hours. ARGV: job field, hour, accepted. Returns what was given back, or -1
 * when there was nothing to settle.
 */
export const SETTLE_JOB = `
local reserved = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '-1')
if reserved < 0 then return -1 end
redis.call('HDEL', KEYS[2], ARGV[1])
local accepted = tonumber(ARGV[3])
if accepted > reserved then accepted = reserved end
if accepted > 0 then redis.call('HINCRBY', KEYS[2], ARGV[2], accepted) end
local unused = reserved - accepted
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if unused > used then unused = used end
if unused > 0 then redis.call('DECRBY', KEYS[1], unused) end
return unused
`;

/**
 * KEYS: counter, hours. ARGV: exact count before fromHour, fromHour, ttl.
 * counter := exact + counted in hours >= fromHour + pending job reservations; older hours are
 * forgotten (ClickHouse's exact count covers them now).
 */
export const RECONCILE = `
local pending = 0
local fields = redis.call('HGETALL', KEYS[2])
for i = 1, #fields, 2 do
  local hour = tonumber(fields[i])
  if hour == nil or hour >= tonumber(ARGV[2]) then
    pending = pending + tonumber(fields[i + 1])
  else
    redis.call('HDEL', KEYS[2], fields[i])
  end
end
local used = tonumber(ARGV[1]) + pending
redis.call('SET', KEYS[1], used, 'EX', ARGV[3])
return used
`;

/**
 * Deletes the seen-id buckets older than ARGV[1] (their shards, 1,000 keys per UNLINK).
 * KEYS: the seen registry. ARGV: oldest bucket to keep, shard prefix. Returns shards unlinked.
 *
 * A shard's key is the bucket's prefix and the digits of its members before their last 14
 * (RESERVE_EVENTS): shard 0's are none, so its key is `<prefix><bucket>:` with nothing after the
 * colon, and the others' `<prefix><bucket>:<shard>`. Until 2026-11-29 this script unlinked
 * `<bucket>:0` instead, which no one writes, and shard 0 of every bucket stayed in Redis for good
 * (a 1/shards share of every remembered id; all of them for an account with one shard); the
 * reconciler also unlinks those left by that release (allowance.reconciler.ts).
 */
export const SWEEP_SEEN = `
local keep = tonumber(ARGV[1])
local fields = redis.call('HGETALL', KEYS[1])
local unlinked = 0
for i = 1, #fields, 2 do
  local bucket = tonumber(fields[i])
  if bucket < keep then
    local shards = tonumber(fields[i + 1])
    local batch = {}
    for s = 0, shards - 1 do
      batch[#batch + 1] = ARGV[2] .. fields[i] .. ':' .. (s == 0 and '' or s)
      if #batch == 1000 or s == shards - 1 then
        unlinked = unlinked + redis.call('UNLINK', unpack(batch))
        batch = {}
      end
    end
    redis.call('HDEL', KEYS[1], fields[i])
  end
end
return unlinked
`;

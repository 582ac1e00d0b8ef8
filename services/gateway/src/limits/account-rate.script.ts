/**
 * The per-account ceilings in Redis: `admit` of account-rate.window.ts, step for step, for all
 * of an account's ceilings in one atomic call (one round trip per request). The clock is Redis's
 * (TIME), so replicas with skewed clocks share one view of time; tests may pass `now` instead.
 *
 * KEYS: one TAT key per ceiling (same hash slot: `{accountId}`).
 * ARGV: now in microseconds ('' = Redis TIME), then per ceiling: interval µs, tolerance µs, cost.
 * Returns {allowed 0|1, hit (1-based, 0 = none), retry after µs, then per ceiling: remaining, reset µs}.
 * TATs are stored with %.0f (integers below 2^53 are exact in Lua's doubles).
 */
export const ADMIT_ACCOUNT_REQUEST = `
-- Redis before 5 replicates scripts verbatim and refuses a write after TIME without this.
if redis.replicate_commands then redis.replicate_commands() end
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
local n = #KEYS
local bases, nexts, waits = {}, {}, {}
local retry, hit = 0, 0
for i = 1, n do
  local interval, tolerance, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local stored = tonumber(redis.call('GET', KEYS[i]) or '0')
  local base = math.max(stored, now)
  local after = base + cost * interval
  local wait = 0
  if cost > 0 and after - now > tolerance and base ~= now then
    if cost * interval > tolerance then wait = base - now else wait = after - tolerance - now end
  end
  bases[i], nexts[i] = base, after
  if wait > retry then retry, hit = wait, i end
end
local out = {retry == 0 and 1 or 0, hit, retry}
for i = 1, n do
  local interval, tolerance, cost = tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i]), tonumber(ARGV[3 * i + 1])
  local tat = bases[i]
  if retry == 0 then
    tat = nexts[i]
    if cost > 0 then
      redis.call('SET', KEYS[i], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000) + 1000)
    end
  end
  local owed = tat - now
  out[#out + 1] = math.max(0, math.floor((tolerance - owed) / interval))
  out[#out + 1] = owed
end
return out
`;

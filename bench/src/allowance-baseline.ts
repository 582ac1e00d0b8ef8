import type { Redis } from '@ingest/platform';

/**
 * The allowance's reservation as it was before ids were remembered as fingerprints (kept here
 * only as the allowance phase's baseline): whole caller-chosen ids in two rotating sets of 5
 * minutes, three set operations per id, the script sent with EVAL on every call.
 */
const RESERVE_EVENTS_WHOLE_IDS = `
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local before = used
local limit = tonumber(ARGV[1])
local out = {}
for i = 5, #ARGV do
  local id = ARGV[i]
  if id ~= '' and (redis.call('SISMEMBER', KEYS[2], id) == 1 or redis.call('SISMEMBER', KEYS[3], id) == 1) then
    out[#out + 1] = 1
  elseif used < limit then
    if id ~= '' then redis.call('SADD', KEYS[2], id) end
    used = used + 1
    out[#out + 1] = 0
  else
    out[#out + 1] = 2
  end
end
redis.call('SET', KEYS[1], used, 'EX', ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
if used > before then
  redis.call('HINCRBY', KEYS[4], ARGV[4], used - before)
  redis.call('EXPIRE', KEYS[4], ARGV[2])
end
table.insert(out, 1, used)
return out
`;

const SEEN_BUCKET_MS = 5 * 60 * 1000;

export function wholeIdReservation(redis: Redis, prefix: string, accountId: string, limit: number) {
  return async (eventIds: string[], atMs: number): Promise<void> => {
    const bucket = Math.floor(atMs / SEEN_BUCKET_MS);
    const base = `${prefix}quota:{${accountId}}`;
    await redis.eval(
      RESERVE_EVENTS_WHOLE_IDS,
      4,
      `${base}:counter`,
      `${base}:seen:${bucket}`,
      `${base}:seen:${bucket - 1}`,
      `${base}:hours`,
      limit,
      40 * 24 * 3600,
      12 * 60,
      Math.floor(atMs / 3_600_000),
      ...eventIds,
    );
  };
}

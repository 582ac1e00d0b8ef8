import { AppError, type Redis } from '@ingest/platform';
import type { RateLimit } from './account-limiter.js';

/**
 * The per-account token bucket in Redis, so every crm-sink replica draws from one bucket: an
 * account's events are spread over partitions and so over replicas, and per-replica buckets
 * would let N replicas make N times the CRM's allowed rate. Same arithmetic as
 * token-bucket.ts, on Redis's clock (TIME), atomic in one script.
 */
// KEYS: bucket hash. ARGV: rate per second, burst, ttl ms. Returns 0 (token taken) or ms to wait.
const TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
  at = now
end
if now > at then
  tokens = math.min(burst, tokens + (now - at) / 1000 * rate)
  at = now
end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) / rate * 1000)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', at))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return wait
`;

export type TakeToken = () => Promise<number>;

export function createSharedTokenBuckets(options: {
  redis: Redis;
  keyPrefix?: string;
  rate: RateLimit;
  /** Which budget: `crm:rate` (CRM calls) by default; the connection checks have their own. */
  bucket?: string;
}): (accountId: string) => TakeToken {
  const prefix = options.keyPrefix ?? '';
  // Idle buckets are full again after burst / rate seconds; keeping them longer holds nothing.
  const ttlMs = Math.ceil((options.rate.burst / options.rate.ratePerSecond) * 1000) + 60_000;
  return (accountId) => {
    const key = `${prefix}${options.bucket ?? 'crm:rate'}:{${encodeURIComponent(accountId)}}`;
    return async () => {
      try {
        return Number(await options.redis.eval(TAKE, 1, key, options.rate.ratePerSecond, options.rate.burst, ttlMs));
      } catch (err) {
        throw new AppError('crm_rate_unavailable', `rate limit bucket unavailable: ${err instanceof Error ? err.message : String(err)}`, { retryable: true });
      }
    };
  };
}

/**
 * A token bucket per account: `ratePerSecond` refill, at most `burst` tokens. HubSpot allows 100
 * requests per 10 s per app and account, so the default (9/s, burst 10) stays under it with room
 * for the reads the sink makes. Pure: the clock is passed in.
 */
export interface TokenBucket {
  /** Takes a token if one is there and returns 0, or returns how many ms until one will be. */
  tryTake(nowMs: number): number;
}

export function createTokenBucket(options: { ratePerSecond: number; burst: number; nowMs: number }): TokenBucket {
  const { ratePerSecond, burst } = options;
  let tokens = burst;
  let at = options.nowMs;
  return {
    tryTake(nowMs) {
      if (nowMs > at) {
        tokens = Math.min(burst, tokens + ((nowMs - at) / 1000) * ratePerSecond);
        at = nowMs;
      }
      if (tokens >= 1) {
        tokens -= 1;
        return 0;
      }
      return Math.ceil(((1 - tokens) / ratePerSecond) * 1000);
    },
  };
}

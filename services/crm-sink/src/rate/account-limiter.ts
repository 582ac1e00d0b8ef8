import { setTimeout as sleep } from 'node:timers/promises';
import { createTokenBucket, type TokenBucket } from './token-bucket.js';

/**
 * How fast one account's CRM calls may go. Each account has its own token bucket and its own
 * pause (a 429's Retry-After, set by the retry loop in ../retry/crm-call.retry.ts), so a
 * rate-limited CRM holds back only the account it belongs to. Retrying is not its job.
 */
export interface RateLimit {
  ratePerSecond: number;
  burst: number;
}

export interface AccountRateLimiter {
  /**
   * Waits for the pause to end and a token. Returns undefined once a token is taken, or the
   * pause left when it is longer than `maxPauseMs` (nothing waited then). Waits end early when
   * `signal` aborts.
   */
  acquire(signal: AbortSignal, maxPauseMs?: number): Promise<{ pausedForMs: number } | undefined>;
  /** Pauses the account until `atMs` (or keeps a later pause). */
  pauseUntil(atMs: number): void;
  pausedUntilMs(): number;
}

export function createAccountRateLimiter(options: {
  rate: RateLimit;
  /** Takes a token from a bucket shared by all replicas (ms to wait, 0 = taken); default: one in this process. */
  takeToken?: () => Promise<number>;
  now?: () => number;
}): AccountRateLimiter {
  const now = options.now ?? Date.now;
  const bucket: TokenBucket = createTokenBucket({ ...options.rate, nowMs: now() });
  const takeToken = options.takeToken ?? (async () => bucket.tryTake(now()));
  let pausedUntil = 0;

  return {
    pausedUntilMs: () => pausedUntil,
    pauseUntil(atMs) {
      pausedUntil = Math.max(pausedUntil, atMs);
    },
    async acquire(signal, maxPauseMs = Number.POSITIVE_INFINITY) {
      for (;;) {
        signal.throwIfAborted();
        const paused = pausedUntil - now();
        if (paused > maxPauseMs) return { pausedForMs: paused };
        if (paused > 0) {
          await sleep(paused, undefined, { signal });
          continue;
        }
        const wait = await takeToken();
        if (wait === 0) return undefined;
        await sleep(wait, undefined, { signal });
      }
    },
  };
}

/**
 * When to try a batch again. Full-jitter exponential backoff (a random wait between 0 and
 * min(cap, base × 2^attempt), as AWS's "Exponential Backoff and Jitter" recommends: many
 * producers refused at once spread out instead of coming back together), and never sooner than
 * the server asked: `Retry-After` (seconds or an HTTP date) or, without it, the largest `t` of the
 * `RateLimit` items whose `r` is 0 (the IETF draft the gateway sends:
 * `RateLimit: "ip";r=0;t=12, "account_events";r=40;t=1`).
 */
export interface RetryOptions {
  /** Attempts per batch, the first included. Default 8. */
  maxAttempts: number;
  /** Base of the exponential wait. Default 200 ms. */
  baseDelayMs: number;
  /** Cap of the exponential wait. Default 30 s. */
  maxDelayMs: number;
  /** The longest server-asked wait the client honours as asked; longer ones are cut to it. Default 120 s. */
  maxServerDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { maxAttempts: 8, baseDelayMs: 200, maxDelayMs: 30_000, maxServerDelayMs: 120_000 };

/** The jittered wait before attempt `attempt + 1` (attempt counts from 1). */
export function backoffMs(options: RetryOptions, attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** Math.min(attempt - 1, 30));
  return Math.floor(random() * ceiling);
}

/** `Retry-After` in milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

/** The wait the `RateLimit` header asks for: the largest `t` among exhausted items (`r=0`), in ms. */
export function rateLimitWaitMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  let wait: number | undefined;
  // Items are separated by commas; parameters by semicolons; names are quoted strings.
  for (const item of value.split(',')) {
    const params = new Map(
      item
        .split(';')
        .slice(1)
        .map((p) => p.trim().split('=') as [string, string | undefined]),
    );
    const remaining = Number(params.get('r'));
    const reset = Number(params.get('t'));
    if (remaining === 0 && Number.isFinite(reset) && reset >= 0) wait = Math.max(wait ?? 0, reset * 1000);
  }
  return wait;
}

/** What the server asked for on this answer, if anything, capped. */
export function serverDelayMs(options: RetryOptions, headers: Headers, nowMs: number): number | undefined {
  const asked = retryAfterMs(headers.get('retry-after'), nowMs) ?? rateLimitWaitMs(headers.get('ratelimit'));
  return asked === undefined ? undefined : Math.min(asked, options.maxServerDelayMs);
}

/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
 * Jitter"): a uniform delay in [0, min(cap, base * 2^attempt)). Full jitter spreads the retries
 * of many records that failed together, so a recovering CRM is not hit by all of them at once.
 */
export function fullJitterDelayMs(attempt: number, options: { baseMs: number; capMs: number }, random: () => number = Math.random): number {
  const ceiling = Math.min(options.capMs, options.baseMs * 2 ** Math.max(0, attempt));
  return Math.floor(random() * ceiling);
}

/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And
 * Jitter"): a uniform delay in [0, min(cap, base * 2^attempt)). Full jitter spreads the retries
 * of many records that failed together, so a recovering CRM is not hit by all of them at once.
 */
export function fullJitterDelayMs(attempt: number, options: { baseMs: number; capMs: number }, random: () => number = Math.random): number {
  const ceiling = Math.min(options.capMs, options.baseMs * 2 ** Math.max(0, attempt));
  return Math.floor(random() * ceiling);
}

/**
 * The one policy for the sink's own infrastructure (Redis, Kafka) failing under a step: a flush
 * whose ledger write or dead-letter publish failed, a park write. Such a step is retried until
 * it succeeds or the sink stops, never dead-lettered (it is not the events' fault).
 *
 * The cap is 5 s. While a step waits, the account's events stay unfinished and hold their
 * partitions' offsets, so the wait after Redis or Kafka are back is what the sink adds to an
 * outage: at most cap + floor (5.1 s). A longer cap (the flush loop had 10 s, the park writer
 * 5 s) saves little: a retry costs a Redis or Kafka call (a redone flush also redoes the CRM
 * calls the ledger has not recorded, paced by the account's rate limit) and one error line. The
 * CRM's own failures have their own settings (CRM_RETRY_*, the park's delays), not this.
 */
export const INFRA_RETRY = { baseMs: 200, capMs: 5_000 } as const;
/** Never retry at once: a failure that answers immediately (connection refused) must not spin. */
const INFRA_RETRY_FLOOR_MS = 100;

/** The wait before retry number `failures + 1` of an infrastructure step. */
export function infraRetryDelayMs(failures: number, random: () => number = Math.random): number {
  return fullJitterDelayMs(failures, INFRA_RETRY, random) + INFRA_RETRY_FLOOR_MS;
}

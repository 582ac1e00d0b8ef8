import { setTimeout as sleep } from 'node:timers/promises';
import { CrmError } from '../adapters/adapter.js';
import type { AccountRateLimiter } from '../rate/account-limiter.js';
import { fullJitterDelayMs } from './backoff.js';

/**
 * How one account's CRM calls are retried: transient failures (5xx, timeouts) with full-jitter
 * backoff within attempts and a time budget, a 429 by pausing the account's rate limiter for
 * its Retry-After, everything else failed at once. With a hold (parking), a wait or a hang
 * beyond it blocks the account instead. Waits end early when `signal` aborts (the sink is
 * stopping): the work then stays unfinished and uncommitted rather than being dead-lettered.
 */
export interface RetryPolicy {
  /** Attempts of a call that fails with transient errors (5xx, timeouts), the first included. */
  maxAttempts: number;
  /** No retry starts after this long since the first attempt (429 waits count too). */
  budgetMs: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

/** A call that failed for good: dead-letter its events with `code` and the CRM's `message`. */
export class CrmCallFailed extends Error {
  constructor(
    readonly code: 'crm_permanent' | 'crm_auth' | 'crm_address_not_allowed' | 'crm_retries_exhausted',
    message: string,
  ) {
    super(message);
    this.name = 'CrmCallFailed';
  }
}

/**
 * The account's CRM cannot be used now: rate limited for longer than the hold, failing, a call
 * hanging past the hold, or the account is suspended (the sync engine says so before any call).
 * Not a failure of the events: the sink parks the account's work (docs/crm-sync.md) and tries
 * again after `retryAfterMs`. `credential_broken`: the OAuth credential's refresh failed for good
 * (or its OAuth app is not configured); held like a suspension until the owner connects again.
 */
export class AccountBlocked extends Error {
  constructor(
    readonly why: 'rate_limited' | 'failing' | 'hanging' | 'suspended' | 'credential_broken',
    readonly retryAfterMs: number,
    message: string,
  ) {
    super(message);
    this.name = 'AccountBlocked';
  }
}

export interface HoldPolicy {
  /** Longest an account's call may wait (Retry-After, backoff) or hang before the account is parked. */
  holdMs: number;
  /** Retry-After values above this are taken as this (a CRM answering 23 days holds nothing that long). */
  maxRetryAfterMs: number;
}

export interface RetryEvents {
  onRetry(kind: 'rate_limited' | 'transient'): void;
  onPause(paused: boolean): void;
}

export interface AccountCaller {
  /**
   * Runs `call` within the account's rate limit, retrying per policy; throws CrmCallFailed,
   * AccountBlocked or the abort. Each attempt gets its own signal, fired when the hold gives up on
   * it or `signal` (shutdown) fires: adapters pass it to every request, so an abandoned call ends.
   */
  call<T>(call: (signal: AbortSignal) => Promise<T>, signal: AbortSignal): Promise<T>;
}

const DEFAULT_RETRY_AFTER_MS = 1_000;

/**
 * The call's result, or AccountBlocked('hanging') once it has run for `holdMs`: the call's signal
 * fires then, so it sends no further request (a Salesforce query paging on) and the one in flight
 * is cut off; its outcome is dropped. The flush it belonged to is parked and redone later, which
 * the ledger makes safe.
 */
function withinHold<T>(call: (signal: AbortSignal) => Promise<T>, holdMs: number, shutdown: AbortSignal): Promise<T> {
  const attempt = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const blocked = new AccountBlocked('hanging', 0, `a CRM call did not answer within ${holdMs} ms`);
      attempt.abort(blocked);
      reject(blocked);
    }, holdMs);
  });
  const pending = call(AbortSignal.any([shutdown, attempt.signal]));
  pending.catch(() => undefined);
  return Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
}

export function createAccountCaller(options: {
  limiter: AccountRateLimiter;
  retry: RetryPolicy;
  events: RetryEvents;
  /** With a hold, waits and hangs beyond it throw AccountBlocked instead of going on (or dead-lettering). */
  hold?: HoldPolicy;
  now?: () => number;
  random?: () => number;
}): AccountCaller {
  const now = options.now ?? Date.now;
  const { limiter, hold } = options;

  async function acquire(signal: AbortSignal): Promise<void> {
    const paused = await limiter.acquire(signal, hold?.holdMs);
    if (paused) throw new AccountBlocked('rate_limited', paused.pausedForMs, `paused for another ${paused.pausedForMs} ms by the CRM's Retry-After`);
  }

  return {
    async call(call, signal) {
      const started = now();
      let attempts = 0;
      for (;;) {
        await acquire(signal);
        try {
          return await (hold ? withinHold(call, hold.holdMs, signal) : call(signal));
        } catch (err) {
          if (err instanceof AccountBlocked) throw err;
          // Stopping: the abort, not a CRM failure to retry or dead-letter.
          if (signal.aborted) throw signal.reason;
          const e = err instanceof CrmError ? err : new CrmError('transient', err instanceof Error ? err.message : String(err));
          if (e.kind === 'permanent') throw new CrmCallFailed('crm_permanent', e.message);
          if (e.kind === 'auth') throw new CrmCallFailed('crm_auth', e.message);
          if (e.kind === 'forbidden') throw new CrmCallFailed('crm_address_not_allowed', e.message);
          const spent = now() - started;
          if (e.kind === 'rate_limited') {
            // Clamped, and counted against the budget like any wait.
            const wait = Math.min(e.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS, hold?.maxRetryAfterMs ?? Number.POSITIVE_INFINITY);
            if (hold && spent + wait > Math.min(hold.holdMs, options.retry.budgetMs)) {
              limiter.pauseUntil(now() + wait);
              throw new AccountBlocked('rate_limited', wait, `rate limited for ${wait} ms: ${e.message}`);
            }
            if (spent >= options.retry.budgetMs) throw new CrmCallFailed('crm_retries_exhausted', `still rate limited after ${spent} ms: ${e.message}`);
            options.events.onRetry('rate_limited');
            limiter.pauseUntil(now() + wait);
            options.events.onPause(true);
            try {
              await sleep(Math.max(0, limiter.pausedUntilMs() - now()), undefined, { signal });
            } finally {
              options.events.onPause(false);
            }
            continue;
          }
          attempts += 1;
          const delay = fullJitterDelayMs(attempts - 1, { baseMs: options.retry.baseDelayMs, capMs: options.retry.maxDelayMs }, options.random);
          const exhausted = attempts >= options.retry.maxAttempts || spent >= options.retry.budgetMs;
          if (hold && (exhausted || spent + delay > hold.holdMs)) {
            throw new AccountBlocked('failing', Math.max(delay, options.retry.baseDelayMs), `failing after ${attempts} attempts: ${e.message}`);
          }
          if (exhausted) throw new CrmCallFailed('crm_retries_exhausted', `gave up after ${attempts} attempts: ${e.message}`);
          options.events.onRetry('transient');
          await sleep(delay, undefined, { signal });
        }
      }
    },
  };
}

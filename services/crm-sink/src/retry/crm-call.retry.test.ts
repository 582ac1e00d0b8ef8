import { describe, expect, it } from 'vitest';
import { CrmError } from '../adapters/adapter.js';
import { createAccountRateLimiter } from '../rate/account-limiter.js';
import { AccountBlocked, createAccountCaller, CrmCallFailed, type HoldPolicy, type RetryPolicy, type RetryEvents } from './crm-call.retry.js';

const retry = { maxAttempts: 3, budgetMs: 60_000, baseDelayMs: 1, maxDelayMs: 5 };
const rate = { ratePerSecond: 1000, burst: 1000 };

function caller(options: { retry: RetryPolicy; events: RetryEvents; hold?: HoldPolicy }) {
  const limiter = createAccountRateLimiter({ rate });
  return { limiter, ...createAccountCaller({ limiter, ...options }) };
}

function limiter(events: string[] = []) {
  return caller({ retry, events: { onRetry: (k) => events.push(`retry:${k}`), onPause: (p) => events.push(`pause:${p}`) } });
}

function failing(errors: unknown[]): () => Promise<string> {
  return async () => {
    const e = errors.shift();
    if (e !== undefined) throw e;
    return 'ok';
  };
}

describe('CRM call retry', () => {
  it('retries transient errors with backoff, then succeeds', async () => {
    const events: string[] = [];
    const result = await limiter(events).call(failing([new CrmError('transient', '503'), new CrmError('transient', '503')]), new AbortController().signal);
    expect(result).toBe('ok');
    expect(events).toEqual(['retry:transient', 'retry:transient']);
  });

  it('gives up after maxAttempts with the CRM’s message', async () => {
    const call = failing([new CrmError('transient', 'HTTP 503 one'), new CrmError('transient', 'HTTP 503 two'), new CrmError('transient', 'HTTP 503 three')]);
    const err = await limiter()
      .call(call, new AbortController().signal)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CrmCallFailed);
    expect(err).toMatchObject({ code: 'crm_retries_exhausted' });
    expect((err as Error).message).toContain('HTTP 503 three');
  });

  it('fails permanent and auth errors at once', async () => {
    await expect(limiter().call(failing([new CrmError('permanent', 'PROPERTY_DOESNT_EXIST')]), new AbortController().signal)).rejects.toMatchObject({
      code: 'crm_permanent',
      message: 'PROPERTY_DOESNT_EXIST',
    });
    await expect(limiter().call(failing([new CrmError('auth', 'expired token')]), new AbortController().signal)).rejects.toMatchObject({ code: 'crm_auth' });
  });

  it('pauses the account for Retry-After on a 429 without spending an attempt', async () => {
    const events: string[] = [];
    const l = limiter(events);
    const started = Date.now();
    const errors = [new CrmError('rate_limited', '429', 429, 150), new CrmError('transient', '503'), new CrmError('transient', '503')];
    expect(await l.call(failing(errors), new AbortController().signal)).toBe('ok');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(events).toEqual(['retry:rate_limited', 'pause:true', 'pause:false', 'retry:transient', 'retry:transient']);
  });

  it('stops waiting when aborted, without turning the wait into a failure', async () => {
    const abort = new AbortController();
    const pending = limiter().call(failing([new CrmError('rate_limited', '429', 429, 60_000)]), abort.signal);
    setTimeout(() => abort.abort(), 20);
    const err = await pending.catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(CrmCallFailed);
    expect((err as Error).name).toBe('AbortError');
  });

  it('hands the call the shutdown signal: a call in flight when the sink stops is aborted, not retried or dead-lettered', async () => {
    for (const withHold of [false, true]) {
      const abort = new AbortController();
      const l = withHold
        ? caller({ retry, hold: { holdMs: 60_000, maxRetryAfterMs: 60_000 }, events: { onRetry: () => undefined, onPause: () => undefined } })
        : limiter();
      let calls = 0;
      const pending = l.call(
        (signal) =>
          new Promise<string>((_, reject) => {
            calls += 1;
            // As the HTTP client does: the signal's reason, once it fires.
            signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
          }),
        abort.signal,
      );
      const stopping = new Error('stopping');
      setTimeout(() => abort.abort(stopping), 20);
      expect(await pending.catch((e: unknown) => e)).toBe(stopping);
      expect(calls).toBe(1);
    }
  });

  describe('with a hold (parking)', () => {
    const hold = { holdMs: 200, maxRetryAfterMs: 60_000 };
    const held = (retryPolicy = retry) => caller({ retry: retryPolicy, hold, events: { onRetry: () => undefined, onPause: () => undefined } });

    it('blocks at once on a Retry-After beyond the hold, clamped (2000000 s is 60 s), and stays blocked until then', async () => {
      const l = held();
      const started = Date.now();
      const err = await l.call(failing([new CrmError('rate_limited', '429', 429, 2_000_000_000)]), new AbortController().signal).catch((e: unknown) => e);
      expect(Date.now() - started).toBeLessThan(150);
      expect(err).toBeInstanceOf(AccountBlocked);
      expect(err).toMatchObject({ why: 'rate_limited', retryAfterMs: 60_000 });
      expect(l.limiter.pausedUntilMs() - Date.now()).toBeLessThanOrEqual(60_000);
      // The next call does not wait out the pause either.
      await expect(l.call(async () => 'ok', new AbortController().signal)).rejects.toMatchObject({ why: 'rate_limited' });
    });

    it('waits a Retry-After within the hold, as before', async () => {
      expect(await held().call(failing([new CrmError('rate_limited', '429', 429, 50)]), new AbortController().signal)).toBe('ok');
    });

    it('blocks a failing CRM instead of dead-lettering it when its retries run out', async () => {
      const err = await held()
        .call(failing(Array.from({ length: 5 }, () => new CrmError('transient', '503'))), new AbortController().signal)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AccountBlocked);
      expect(err).toMatchObject({ why: 'failing' });
    });

    it('blocks on a call that hangs past the hold, without waiting for it', async () => {
      const started = Date.now();
      const hanging = () => new Promise<string>((resolve) => setTimeout(() => resolve('late'), 2_000));
      await expect(held().call(hanging, new AbortController().signal)).rejects.toMatchObject({ why: 'hanging' });
      expect(Date.now() - started).toBeLessThan(1_000);
    });

    it('still fails permanent errors at once', async () => {
      await expect(held().call(failing([new CrmError('permanent', 'bad')]), new AbortController().signal)).rejects.toBeInstanceOf(CrmCallFailed);
    });
  });
});

import { describe, expect, it } from 'vitest';
import { backoffMs, DEFAULT_RETRY, rateLimitWaitMs, retryAfterMs, serverDelayMs } from './retry.policy.js';

describe('full-jitter backoff', () => {
  it('waits a random share of min(cap, base × 2^(attempt-1))', () => {
    expect(backoffMs(DEFAULT_RETRY, 1, () => 0.999)).toBe(199);
    expect(backoffMs(DEFAULT_RETRY, 4, () => 0.5)).toBe(800);
    expect(backoffMs(DEFAULT_RETRY, 60, () => 0.999)).toBe(29_970);
    expect(backoffMs(DEFAULT_RETRY, 3, () => 0)).toBe(0);
  });
});

describe('what the server asks for', () => {
  const now = Date.parse('2026-11-27T12:00:00Z');
  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(retryAfterMs('7', now)).toBe(7_000);
    expect(retryAfterMs('Fri, 27 Nov 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(retryAfterMs('soon', now)).toBeUndefined();
    expect(retryAfterMs(null, now)).toBeUndefined();
  });

  it('reads the RateLimit header: the longest t among exhausted policies, none when all have room', () => {
    expect(rateLimitWaitMs('"ip";r=0;t=12, "account_events";r=0;t=3')).toBe(12_000);
    expect(rateLimitWaitMs('"ip";r=119;t=60, "account_requests";r=999;t=1')).toBeUndefined();
    expect(rateLimitWaitMs('garbage')).toBeUndefined();
  });

  it('prefers Retry-After and caps a wait longer than maxServerDelayMs', () => {
    expect(serverDelayMs(DEFAULT_RETRY, new Headers({ 'retry-after': '2', ratelimit: '"ip";r=0;t=9' }), now)).toBe(2_000);
    expect(serverDelayMs(DEFAULT_RETRY, new Headers({ ratelimit: '"ip";r=0;t=9' }), now)).toBe(9_000);
    expect(serverDelayMs(DEFAULT_RETRY, new Headers({ 'retry-after': '86400' }), now)).toBe(DEFAULT_RETRY.maxServerDelayMs);
  });
});

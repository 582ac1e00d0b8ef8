import { describe, expect, it } from 'vitest';
import { classifyHttpFailure, kindOfStatus, parseRetryAfterMs, safeMessage } from './crm-errors.js';

describe('CRM error classification', () => {
  it('reads Retry-After as seconds or as an HTTP-date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfterMs('2', now)).toBe(2000);
    expect(parseRetryAfterMs(['7'], now)).toBe(7000);
    expect(parseRetryAfterMs('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfterMs('Wed, 31 Dec 2025 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfterMs(undefined, now)).toBeUndefined();
    expect(parseRetryAfterMs('soon', now)).toBeUndefined();
  });

  it('maps statuses to kinds', () => {
    expect([429, 401, 403, 408, 500, 502, 503, 400, 404, 409, 422].map(kindOfStatus)).toEqual([
      'rate_limited',
      'auth',
      'auth',
      'transient',
      'transient',
      'transient',
      'transient',
      'permanent',
      'permanent',
      'permanent',
      'permanent',
    ]);
  });

  it('uses the default wait for a 429 without Retry-After, and lets the body override the kind', () => {
    expect(classifyHttpFailure({ crm: 'X', status: 429, detail: {}, secrets: [], defaultRetryAfterMs: 1234 })).toMatchObject({
      kind: 'rate_limited',
      retryAfterMs: 1234,
    });
    expect(classifyHttpFailure({ crm: 'X', status: 403, detail: { kind: 'rate_limited' }, secrets: [] })).toMatchObject({
      kind: 'rate_limited',
      retryAfterMs: 10_000,
    });
  });

  it('never lets a credential or bearer token into a message, and bounds its length', () => {
    const message = safeMessage('token tok_secret_123 rejected; Authorization: Bearer abc.def', ['tok_secret_123']);
    expect(message).toBe('token [redacted] rejected; Authorization: Bearer [redacted]');
    expect(safeMessage('x'.repeat(1000), []).length).toBe(300);
    const err = classifyHttpFailure({ crm: 'HubSpot', status: 400, detail: { message: 'bad value tok_secret_123' }, secrets: ['tok_secret_123'] });
    expect(err.message).toBe('HubSpot answered 400: bad value [redacted]');
  });
});

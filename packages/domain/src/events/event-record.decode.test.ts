import { describe, expect, it } from 'vitest';
import { createEventRecordDecoder } from './event-record.decode.js';

const decode = createEventRecordDecoder();

const valid = {
  v: 1,
  accountId: 'acc_1',
  eventId: '0190b8e0-0000-7000-8000-000000000001',
  eventName: 'Signed Up',
  email: 'ada@example.com',
  domain: null,
  timestampMs: 1_767_225_600_123,
  receivedAtMs: 1_767_225_601_456,
  properties: { plan: 'pro', seats: 3 },
  source: 'api',
  jobId: null,
};

const bytes = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

describe('event record decoder', () => {
  it('accepts a valid record', () => {
    const result = decode(bytes(valid));
    expect(result).toEqual({ ok: true, record: valid });
  });

  it("takes a newer writer's record: optional fields it does not know are accepted, not dead-lettered", () => {
    // What the next writer is planned to add (identity fields), and anything else of the same version.
    const newer = { ...valid, userId: 'u-1', anonymousId: 'a-1', context: { library: { name: 'analytics.js' } }, somethingLater: [1, 2] };
    const result = decode(bytes(newer));
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.record).toMatchObject(valid);
  });

  it.each([
    ['empty value', null, 'empty_message'],
    ['invalid JSON', '{"v":1,', 'invalid_json'],
    ['JSON null', 'null', 'unknown_version'],
    ['unknown version', { ...valid, v: 2 }, 'unknown_version'],
    ['missing field', { ...valid, eventName: undefined }, 'schema_mismatch'],
    ['wrong type', { ...valid, timestampMs: '2026-01-01' }, 'schema_mismatch'],
  ])('rejects %s with a reason', (_name, input, code) => {
    const result = decode(input === null ? null : bytes(input));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.code).toBe(code);
      expect(result.reason.length).toBeGreaterThan(5);
    }
  });
});

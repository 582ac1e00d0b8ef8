import { describe, expect, it } from 'vitest';
import { createJobMessageDecoder } from './job-message.decode.js';

const decode = createJobMessageDecoder();
const bytes = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));

const base = { v: 1, jobId: 'job-1', accountId: 'acc_1', source: 'bulk' };
const chunk = { ...base, type: 'chunk', seq: 0, receivedAtMs: 1_767_225_600_000, items: [{ index: 0, event: { eventName: 'e' } }] };
const sealed = { ...base, type: 'sealed', chunks: 1, totalEvents: 1, receivedAtMs: 1_767_225_600_000 };
const aborted = { ...base, type: 'aborted', reason: 'upload_failed' };

describe('job message decoder', () => {
  it.each([
    ['chunk', chunk],
    ['sealed', sealed],
    ['aborted', aborted],
  ])('accepts a valid %s message', (_name, message) => {
    expect(decode(bytes(message))).toEqual({ ok: true, message });
  });

  it.each([
    ['chunk', { ...chunk, traceId: 't-1', items: [{ index: 0, event: { eventName: 'e' }, sourceLine: 7 }] }],
    ['sealed', { ...sealed, checksum: 'abc' }],
    ['aborted', { ...aborted, detail: { bytes: 10 } }],
  ])("takes a newer writer's %s message: optional fields it does not know are accepted, not dead-lettered", (_name, message) => {
    expect(decode(bytes(message))).toEqual({ ok: true, message });
  });

  it.each([
    ['an empty value', null, 'empty_message', /no value/],
    ['invalid JSON', '{"v":1,', 'invalid_json', /not JSON/],
    ['a JSON array', '[1]', 'schema_mismatch', /JSON object/],
    ['another version', { ...chunk, v: 2 }, 'unknown_version', /version 2/],
    ['no version', { ...chunk, v: undefined }, 'unknown_version', /version null/],
    ['an unknown type', { ...chunk, type: 'resumed' }, 'unknown_message_type', /"resumed"/],
    ['a chunk without items', { ...chunk, items: undefined }, 'schema_mismatch', /chunk message \/ must have required property 'items'/],
    ['a negative seq', { ...chunk, seq: -1 }, 'schema_mismatch', /\/seq must be >= 0/],
    [
      '501 items',
      { ...chunk, items: Array.from({ length: 501 }, (_, index) => ({ index, event: {} })) },
      'schema_mismatch',
      /\/items must NOT have more than 500/,
    ],
    ['a seal without totals', { ...sealed, totalEvents: undefined }, 'schema_mismatch', /totalEvents/],
    ['an unknown source', { ...aborted, source: 'ftp' }, 'schema_mismatch', /\/source/],
  ])('rejects %s with a code and a reason', (_name, input, code, reason) => {
    const result = decode(input === null ? null : bytes(input));
    expect(result).toEqual({ ok: false, code, reason: expect.stringMatching(reason) });
  });

  it('never puts event contents into the reason', () => {
    const secret = 'ada@secret.example';
    const result = decode(bytes({ ...chunk, seq: 'x', items: [{ index: 0, event: { email: secret } }] }));
    expect(result.ok).toBe(false);
    expect(JSON.stringify(result)).not.toContain(secret);
  });
});

import { compileValidator, EraseBody } from '@ingest/schemas';
import { ProblemError } from '@ingest/http';
import { describe, expect, it } from 'vitest';
import { normalizedErasureValue } from './erasure.routes.js';

const validate = compileValidator<EraseBody>(EraseBody);

describe('the erasure request', () => {
  it('takes one identifier: a type of the enum and a bounded value, nothing else', () => {
    expect(validate({ type: 'email', value: 'ada@example.com' })).toBe(true);
    expect(validate({ type: 'domain', value: 'example.com' })).toBe(true);
    for (const bad of [
      {},
      { type: 'email' },
      { value: 'ada@example.com' },
      { type: 'phone', value: '+1' },
      // userId is one enum value away, once `events` has user_id on every server (docs/erasure.md).
      { type: 'userId', value: 'u1' },
      { type: 'email', value: '' },
      { type: 'email', value: `${'a'.repeat(321)}` },
      { type: 'email', value: 'ada@example.com', domain: 'example.com' },
      { type: 'email', value: ['ada@example.com'] },
    ]) {
      expect(validate(bad), JSON.stringify(bad)).toBe(false);
    }
  });

  it('normalises the value as the event rules do', () => {
    expect(normalizedErasureValue({ type: 'email', value: ' Ada@Example.COM ' })).toBe('ada@example.com');
    expect(normalizedErasureValue({ type: 'domain', value: 'EXAMPLE.com.' })).toBe('example.com');
  });

  it.each([
    ['email', 'not-an-email'],
    ['email', 'ada@localhost'],
    ['domain', 'https://example.com/'],
    ['domain', 'ada@example.com'],
  ] as const)('refuses %s %j with a 400 that points at /value', (type, value) => {
    let thrown: unknown;
    try {
      normalizedErasureValue({ type, value });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(ProblemError);
    expect((thrown as ProblemError).status).toBe(400);
    expect((thrown as ProblemError).errors?.[0]?.field).toBe('/value');
  });
});

import { describe, expect, it } from 'vitest';
import { presentedKey } from './presented-key.js';

const basic = (credentials: string) => `Basic ${Buffer.from(credentials).toString('base64')}`;
const KEY = 'svc_live_0123456789abcdefghijABCDEFGHIJ0123456789abc';

describe('presentedKey', () => {
  it('reads a Bearer key on every route', () => {
    for (const carrier of ['bearer', 'basic'] as const) expect(presentedKey(carrier, `Bearer ${KEY}`, undefined)).toBe(KEY);
    expect(presentedKey('bearer', `  bearer ${KEY} `, undefined)).toBe(KEY);
  });

  it('reads HTTP Basic with the key as user name (any password, or none) only where the route allows it', () => {
    expect(presentedKey('basic', basic(`${KEY}:`), undefined)).toBe(KEY);
    expect(presentedKey('basic', basic(`${KEY}:ignored`), undefined)).toBe(KEY);
    expect(presentedKey('basic', basic(KEY), undefined)).toBe(KEY);
    expect(presentedKey('bearer', basic(`${KEY}:`), undefined)).toBeUndefined();
  });

  it('finds no key in malformed or empty credentials (each then gets the one 401)', () => {
    expect(presentedKey('basic', basic(':password'), undefined)).toBeUndefined();
    expect(presentedKey('basic', 'Basic !!!', undefined)).toBeUndefined();
    expect(presentedKey('basic', 'Basic', undefined)).toBeUndefined();
    expect(presentedKey('basic', `Basic ${'A'.repeat(2_000)}`, undefined)).toBeUndefined();
    expect(presentedKey('basic', undefined, undefined)).toBeUndefined();
    expect(presentedKey('basic', `Digest ${KEY}`, undefined)).toBeUndefined();
  });

  it('reads a writeKey string from the body on body routes, never a header there', () => {
    expect(presentedKey('body', undefined, { writeKey: KEY, type: 'track' })).toBe(KEY);
    expect(presentedKey('body', `Bearer ${KEY}`, {})).toBeUndefined();
    expect(presentedKey('body', undefined, { writeKey: 5 })).toBeUndefined();
    expect(presentedKey('body', undefined, { writeKey: '' })).toBeUndefined();
    expect(presentedKey('body', undefined, 'text')).toBeUndefined();
    expect(presentedKey('body', undefined, null)).toBeUndefined();
  });
});

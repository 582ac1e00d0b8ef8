import { describe, expect, it } from 'vitest';
import { API_KEY_PREFIX, generateApiKey, hashApiKey, isWellFormedApiKey, toBase62 } from './api-keys.js';

describe('API keys', () => {
  it('are svc_live_ + 43 base62 characters, with a display prefix and a SHA-256 hash', () => {
    const key = generateApiKey();
    expect(key.plaintext).toMatch(/^svc_live_[0-9A-Za-z]{43}$/);
    expect(key.prefix).toBe(key.plaintext.slice(0, 15));
    expect(key.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(key.hash).toBe(hashApiKey(key.plaintext));
    expect(isWellFormedApiKey(key.plaintext)).toBe(true);
  });

  it('encode the full 256 bits (all-zero and all-one secrets keep their length)', () => {
    expect(toBase62(Buffer.alloc(32, 0), 43)).toBe('0'.repeat(43));
    const max = toBase62(Buffer.alloc(32, 0xff), 43);
    expect(max).toHaveLength(43);
    expect(generateApiKey(() => Buffer.alloc(32, 0xff)).plaintext).toBe(API_KEY_PREFIX + max);
  });

  it('differ each time', () => {
    const keys = new Set(Array.from({ length: 200 }, () => generateApiKey().plaintext));
    expect(keys.size).toBe(200);
  });

  it.each([
    '',
    'svc_live_',
    `svc_test_${'a'.repeat(43)}`,
    `${API_KEY_PREFIX}${'a'.repeat(42)}`,
    `${API_KEY_PREFIX}${'a'.repeat(42)}!`,
    ` ${API_KEY_PREFIX}${'a'.repeat(43)}`,
  ])('reject malformed candidate %j', (candidate) => {
    expect(isWellFormedApiKey(candidate)).toBe(false);
  });
});

import { describe, expect, it } from 'vitest';
import { generatePassword, hashPassword, OWNER_PASSWORD_COST, passwordNeedsRehash, verifyPassword } from './owner-password.js';

// Hashes at the real parameters take ~0.4 s each on an idle core (the point of them), more on a busy machine.
const SLOW = { timeout: 60_000 };

describe('owner passwords', () => {
  it('hash with scrypt and a per-user salt, and verify only the right password', SLOW, async () => {
    const a = await hashPassword('correct horse battery staple');
    const b = await hashPassword('correct horse battery staple');
    expect(a).toMatch(/^scrypt\$131072\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]{44}$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse battery staple', a)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', a)).toBe(false);
    expect(await verifyPassword('', a)).toBe(false);
  });

  it("uses OWASP's current scrypt minimum (N=2^17, r=8, p=1) for new hashes", () => {
    expect(OWNER_PASSWORD_COST).toEqual({ N: 131072, r: 8, p: 1 });
  });

  it('verifies a hash made with the old parameters (N=2^15) and flags it for re-hashing', SLOW, async () => {
    const old = await hashPassword('correct horse battery staple', { N: 2 ** 15, r: 8, p: 1 });
    expect(old.startsWith('scrypt$32768$8$1$')).toBe(true);
    expect(await verifyPassword('correct horse battery staple', old)).toBe(true);
    expect(await verifyPassword('wrong horse battery staple', old)).toBe(false);
    expect(passwordNeedsRehash(old)).toBe(true);
    const current = await hashPassword('correct horse battery staple');
    expect(passwordNeedsRehash(current)).toBe(false);
    expect(passwordNeedsRehash('not a hash')).toBe(false);
  });

  it('treats malformed or absurd stored hashes as a mismatch instead of throwing', async () => {
    for (const stored of ['', 'plain', 'scrypt$1$1$1$$', 'scrypt$1073741824$8$1$c2FsdA==$AAAA', 'bcrypt$x$y$z$a$b']) {
      expect(await verifyPassword('anything', stored)).toBe(false);
    }
  });

  it('generates 120-bit passwords', () => {
    const p = generatePassword();
    expect(p).toMatch(/^[A-Za-z0-9_-]{20}$/);
    expect(generatePassword()).not.toBe(p);
  });
});

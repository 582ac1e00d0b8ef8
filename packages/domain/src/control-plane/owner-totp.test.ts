import { generate } from 'otplib';
import { describe, expect, it } from 'vitest';
import {
  matchRecoveryCode,
  newRecoveryCodes,
  newTotpSecret,
  openTotpSecret,
  ownerSecretKey,
  recoveryCodeHash,
  sealTotpSecret,
  totpUri,
  verifyTotp,
} from './owner-totp.js';

const KEY = ownerSecretKey(Buffer.alloc(32, 7).toString('base64'));
const OTHER_KEY = ownerSecretKey(Buffer.alloc(32, 8).toString('base64'));

describe('owner TOTP', () => {
  it('accepts the code of the current step and of one step either side, nothing further', async () => {
    const secret = newTotpSecret();
    const now = 1_800_000_015_000; // 15 s into a step
    const at = (offsetSeconds: number) => generate({ secret, epoch: now / 1000 + offsetSeconds });
    const step = Math.floor(now / 30_000);
    expect(await verifyTotp(secret, await at(0), now)).toBe(step);
    expect(await verifyTotp(secret, await at(-30), now)).toBe(step - 1);
    expect(await verifyTotp(secret, await at(30), now)).toBe(step + 1);
    expect(await verifyTotp(secret, await at(-90), now)).toBeUndefined();
    expect(await verifyTotp(secret, await at(90), now)).toBeUndefined();
  });

  it('treats anything but six digits as a mismatch', async () => {
    const secret = newTotpSecret();
    for (const code of ['', '12345', '1234567', 'abcdef', ' 123456']) expect(await verifyTotp(secret, code)).toBeUndefined();
  });

  it('makes an otpauth URI an authenticator app reads', () => {
    const uri = totpUri('JBSWY3DPEHPK3PXP', 'ada@example.com', 'Ingest');
    expect(uri).toMatch(/^otpauth:\/\/totp\/Ingest:ada(%40|@)example\.com\?/);
    expect(uri).toContain('secret=JBSWY3DPEHPK3PXP');
  });

  it('seals the secret for one owner: it opens with the key and owner it was sealed for only', () => {
    const sealed = sealTotpSecret('JBSWY3DPEHPK3PXP', 'own_1', KEY);
    expect(JSON.stringify(sealed)).not.toContain('JBSWY3DPEHPK3PXP');
    expect(openTotpSecret(sealed, 'own_1', [OTHER_KEY, KEY])).toBe('JBSWY3DPEHPK3PXP');
    expect(() => openTotpSecret(sealed, 'own_2', [KEY])).toThrow(/does not authenticate/);
    expect(() => openTotpSecret(sealed, 'own_1', [OTHER_KEY])).toThrow(/not configured/);
    const tampered = { ...sealed, ciphertext: Buffer.from('x'.repeat(16)).toString('base64') };
    expect(() => openTotpSecret(tampered, 'own_1', [KEY])).toThrow(/does not authenticate/);
  });

  it('refuses a console key shorter than 32 bytes', () => {
    expect(() => ownerSecretKey(Buffer.alloc(16).toString('base64'))).toThrow(/at least 32 bytes/);
  });

  it('makes ten distinct recovery codes, matched by hash, case and dashes ignored', () => {
    const codes = newRecoveryCodes();
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const c of codes) expect(c).toMatch(/^[0-9a-z]{5}-[0-9a-z]{5}$/);
    const hashes = codes.map(recoveryCodeHash);
    expect(matchRecoveryCode((codes[3] ?? '').toUpperCase().replace('-', ''), hashes)).toBe(hashes[3]);
    expect(matchRecoveryCode('00000-00000', hashes)).toBeUndefined();
  });
});

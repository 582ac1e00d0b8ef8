import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { generateSecret, generateURI, verify } from 'otplib';
import { AppError } from '@ingest/platform';

/**
 * Owners' second factor: TOTP (RFC 6238: SHA-1, 6 digits, 30 s, what every authenticator app
 * reads from an otpauth:// URI) through otplib, plus single-use recovery codes.
 *
 * The TOTP secret is a shared secret the console must read back to verify a code, so it cannot be
 * hashed: it is sealed with AES-256-GCM under a console key (DASHBOARD_SECRET_KEY, never in a
 * record) before it goes into the owner's record, with the owner's id as additional authenticated
 * data, so a sealed secret copied to another owner does not open. Recovery codes are 50 random
 * bits each, so a SHA-256 of each is stored (as for API keys): a slow hash adds nothing to
 * guessing 2^50 values online through the sign-in throttle.
 */
export const TOTP_SEAL_ALGORITHM = 'A256GCM';
/** Codes of the step before and after the current one count too (clock drift of up to 30 s). */
export const TOTP_TOLERANCE_SECONDS = 30;
export const RECOVERY_CODE_COUNT = 10;

export interface SealedTotpSecret {
  alg: typeof TOTP_SEAL_ALGORITHM;
  /** Which console key sealed it (ownerSecretKeyId): keys can be rotated, old ones kept to open. */
  kid: string;
  iv: string;
  ciphertext: string;
  tag: string;
}

/** What an owner's record holds about their second factor; absent: no second factor. */
export interface OwnerTotp {
  sealed: SealedTotpSecret;
  enabledAt: string;
  /** SHA-256 (hex) of each unused recovery code. */
  recoveryCodeHashes: string[];
}

export function newTotpSecret(): string {
  return generateSecret({ length: 20 });
}

export function totpUri(secret: string, email: string, issuer: string): string {
  return generateURI({ issuer, label: email, secret });
}

/**
 * The matched time step, or undefined. `nowMs` for tests; anything that is not six digits is a
 * mismatch, never an exception.
 */
export async function verifyTotp(secret: string, code: string, nowMs = Date.now()): Promise<number | undefined> {
  if (!/^\d{6}$/.test(code)) return undefined;
  const result = await verify({ secret, token: code, epoch: Math.floor(nowMs / 1000), epochTolerance: TOTP_TOLERANCE_SECONDS });
  return result.valid && 'timeStep' in result ? result.timeStep : undefined;
}

/** The console key: 32 bytes or more, base64. Its id is the first 16 hex digits of its SHA-256. */
export interface OwnerSecretKey {
  kid: string;
  /** Seals TOTP secrets. */
  key: Buffer;
  /** Signs the dashboard's known-device cookies. */
  macKey: Buffer;
}

export function ownerSecretKey(base64: string): OwnerSecretKey {
  const raw = Buffer.from(base64.trim(), 'base64');
  if (raw.length < 32) throw new AppError('invalid_config', 'the dashboard secret key must be at least 32 bytes, base64-encoded');
  // One derived key per use, so the device-cookie MAC key and the sealing key are never the same bytes.
  const derive = (use: string) => Buffer.from(hkdfSync('sha256', raw, Buffer.alloc(0), `ingest ${use} v1`, 32));
  return { kid: createHash('sha256').update(raw).digest('hex').slice(0, 16), key: derive('owner-totp seal'), macKey: derive('dashboard device mac') };
}

const aad = (ownerId: string) => Buffer.from(`owner-totp:v1:${ownerId}`, 'utf8');

export function sealTotpSecret(secret: string, ownerId: string, key: OwnerSecretKey): SealedTotpSecret {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(aad(ownerId));
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return {
    alg: TOTP_SEAL_ALGORITHM,
    kid: key.kid,
    iv: iv.toString('base64'),
    ciphertext: ciphertext.toString('base64'),
    tag: cipher.getAuthTag().toString('base64'),
  };
}

/** Throws AppError `owner_totp_unreadable` (unknown key, tampered or moved record). */
export function openTotpSecret(sealed: SealedTotpSecret, ownerId: string, keys: readonly OwnerSecretKey[]): string {
  const key = keys.find((k) => k.kid === sealed.kid);
  if (sealed.alg !== TOTP_SEAL_ALGORITHM || !key)
    throw new AppError('owner_totp_unreadable', `the second factor is sealed with key ${sealed.kid}, which is not configured`);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(aad(ownerId));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new AppError('owner_totp_unreadable', 'the sealed second factor does not authenticate for this owner');
  }
}

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/** Ten codes of 10 base32 characters (50 bits), shown once as `xxxxx-xxxxx`. */
export function newRecoveryCodes(count = RECOVERY_CODE_COUNT): string[] {
  return Array.from({ length: count }, () => {
    const chars = [...randomBytes(10)].map((b) => CROCKFORD[b & 31]).join('');
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

/** Case and dashes do not matter when typed. */
export function recoveryCodeHash(code: string): string {
  return createHash('sha256')
    .update(code.toLowerCase().replace(/[^0-9a-z]/g, ''))
    .digest('hex');
}

/** The stored hash the code matches, or undefined (constant-time per comparison). */
export function matchRecoveryCode(code: string, hashes: readonly string[]): string | undefined {
  const candidate = Buffer.from(recoveryCodeHash(code), 'hex');
  return hashes.find((h) => {
    const stored = Buffer.from(h, 'hex');
    return stored.length === candidate.length && timingSafeEqual(stored, candidate);
  });
}

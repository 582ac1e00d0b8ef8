import { createHash, randomBytes } from 'node:crypto';

/**
 * API keys: `svc_live_` + 32 random bytes in base62 (43 characters). 256-bit secrets need no
 * slow hash: SHA-256 is stored, looked up directly, and the key cannot be recovered from it.
 */
export const API_KEY_PREFIX = 'svc_live_';
/**
 * Publishable keys (access-control.ts) look different on purpose, as Stripe's `pk_` do: whoever
 * finds one in a web page or a secret scanner's report can tell it is meant to be public.
 */
export const PUBLISHABLE_KEY_PREFIX = 'svc_pub_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 43; // ceil(256 / log2(62))
const API_KEY_PATTERN = new RegExp(`^(?:${API_KEY_PREFIX}|${PUBLISHABLE_KEY_PREFIX})[0-9A-Za-z]{${SECRET_LENGTH}}$`);
/** Characters of the secret kept in the display prefix: enough to tell keys apart, useless to guess. */
const DISPLAY_CHARS = 6;

export function toBase62(bytes: Buffer, length: number): string {
  let n = BigInt(`0x${bytes.toString('hex') || '0'}`);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(length, '0');
}

export interface GeneratedApiKey {
  plaintext: string;
  prefix: string;
  hash: string;
}

export function generateApiKey(random: (size: number) => Buffer = randomBytes, type: 'secret' | 'publishable' = 'secret'): GeneratedApiKey {
  const prefix = type === 'publishable' ? PUBLISHABLE_KEY_PREFIX : API_KEY_PREFIX;
  const plaintext = prefix + toBase62(random(32), SECRET_LENGTH);
  return { plaintext, prefix: plaintext.slice(0, prefix.length + DISPLAY_CHARS), hash: hashApiKey(plaintext) };
}

export function hashApiKey(plaintext: string): string {
  return createHash('sha256').update(plaintext, 'utf8').digest('hex');
}

export function isWellFormedApiKey(candidate: string): boolean {
  return API_KEY_PATTERN.test(candidate);
}

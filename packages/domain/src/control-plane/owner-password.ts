import { randomBytes, scrypt, type ScryptOptions, timingSafeEqual } from 'node:crypto';

/**
 * Owner passwords: scrypt with a per-user 16-byte salt. New hashes use N=2^17, r=8, p=1, the
 * minimum OWASP's Password Storage Cheat Sheet recommends today (128 MiB and a few hundred
 * milliseconds per guess). Hashes made before (N=2^15) still verify: the parameters are stored
 * with each hash, and sign-in re-hashes a password whose hash is weaker than OWNER_PASSWORD_COST
 * (passwordNeedsRehash). 128 MiB per hash is why the console caps concurrent hashes
 * (password-hash.gate.ts in the console).
 *
 * Format: `scrypt$<N>$<r>$<p>$<salt b64>$<hash b64>`.
 */
export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 256;
export interface ScryptCost {
  N: number;
  r: number;
  p: number;
}
export const OWNER_PASSWORD_COST: Readonly<ScryptCost> = Object.freeze({ N: 2 ** 17, r: 8, p: 1 });
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, cost: ScryptCost): Promise<Buffer> {
  // maxmem above the 128*N*r bytes scrypt needs; Node's default (32 MiB) refuses N=2^15 already.
  const options: ScryptOptions = { ...cost, maxmem: 256 * cost.N * cost.r };
  return new Promise((resolve, reject) => scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))));
}

export async function hashPassword(password: string, cost: ScryptCost = OWNER_PASSWORD_COST): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, cost);
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64'), key.toString('base64')].join('$');
}

function parse(stored: string): { cost: ScryptCost; salt: Buffer; expected: Buffer } | undefined {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return undefined;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (!N || !r || !p || N > 2 ** 20 || r > 32 || p > 16) return undefined;
  const salt = Buffer.from(parts[4] ?? '', 'base64');
  const expected = Buffer.from(parts[5] ?? '', 'base64');
  if (salt.length === 0 || expected.length !== KEY_LENGTH) return undefined;
  return { cost: { N, r, p }, salt, expected };
}

/** Constant-time comparison; a malformed stored hash is a mismatch, never an exception. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed) return false;
  const actual = await derive(password, parsed.salt, parsed.cost);
  return timingSafeEqual(actual, parsed.expected);
}

/** True when the stored hash is weaker than the current parameters (re-hash it at the next sign-in). */
export function passwordNeedsRehash(stored: string, cost: ScryptCost = OWNER_PASSWORD_COST): boolean {
  const parsed = parse(stored);
  if (!parsed) return false;
  return parsed.cost.N < cost.N || parsed.cost.r < cost.r || parsed.cost.p < cost.p;
}

/** A hash of a password nobody knows: sign-in verifies against it for unknown emails, so both cases cost the same. */
let decoy: Promise<string> | undefined;
export function decoyPasswordHash(): Promise<string> {
  decoy ??= hashPassword(randomBytes(24).toString('base64'));
  return decoy;
}

/** A password for the operator to hand over: 20 base64url characters (120 bits). */
export function generatePassword(): string {
  return randomBytes(15).toString('base64url');
}

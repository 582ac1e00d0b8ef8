import { createHash } from 'node:crypto';
import type { Redis } from '@ingest/platform';
import { ProblemError, rateLimitStore } from '@ingest/http';

export interface SignInThrottleDeps {
  redis: Redis;
  keyPrefix: string;
  /** Sign-in attempts per email (known or not) per window. */
  perEmail: number;
  /** Sign-in attempts on all of one account's owners per window. */
  perAccount: number;
  windowMs: number;
}

/**
 * `knownDeviceId`: the browser's valid device cookie for this owner (known-device.ts). Its
 * attempts count on the device's own budget (perEmail per window) instead of the email's and
 * account's, so failures elsewhere do not lock it out.
 */
export type SignInThrottle = (email: string, accountId: string | undefined, knownDeviceId?: string) => Promise<void>;

/** Said for every sign-in while Redis is away, right password or wrong, before either is checked. */
export const SIGN_IN_UNAVAILABLE = 'Sign-in is unavailable right now; retry in a minute.';

/**
 * Password guessing spread over many addresses: beside the per-address limit of the route, every
 * attempt counts against its email (hashed: Redis never holds the address) and, when the email
 * is an owner's, against the owner's account, in fixed windows shared by all replicas through
 * Redis. It reuses the per-address limiter's store (the @fastify/rate-limit Lua script).
 *
 * A browser that signed in as the owner before (a valid device cookie) has its own budget of
 * the same size instead: an attacker who burns the email's budget from elsewhere does not lock
 * the owner out of their own browsers. Every attempt counts, also the second step of a
 * sign-in with a second factor and a wrong TOTP or recovery code.
 *
 * It runs before the password is checked and fails closed: while Redis is away every sign-in is
 * 503 with the same body and without the scrypt work, so a right password cannot be told from a
 * wrong one (a session could not be made anyway: sessions live in Redis).
 */
export function createSignInThrottle(deps: SignInThrottleDeps): SignInThrottle {
  const Store = rateLimitStore(deps.redis, `${deps.keyPrefix}dashboard:signin:`);
  const store = new (
    Store as unknown as new (options: object) => {
      incr(key: string, cb: (err: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number, max: number): void;
    }
  )({});
  const count = (key: string, max: number) =>
    new Promise<{ current: number; ttl: number }>((resolve, reject) =>
      store.incr(key, (err, result) => (err || !result ? reject(err ?? new Error('no result')) : resolve(result)), deps.windowMs, max),
    );

  return async (email, accountId, knownDeviceId) => {
    const emailKey = `email:${createHash('sha256').update(email.trim().toLowerCase()).digest('hex')}`;
    let counts: { which: 'email' | 'account' | 'device'; max: number; current: number; ttl: number }[];
    try {
      if (knownDeviceId !== undefined) {
        counts = [{ which: 'device', max: deps.perEmail, ...(await count(`device:${knownDeviceId}`, deps.perEmail)) }];
      } else {
        const byEmail = await count(emailKey, deps.perEmail);
        const byAccount = accountId ? await count(`account:${accountId}`, deps.perAccount) : undefined;
        counts = [
          { which: 'email', max: deps.perEmail, ...byEmail },
          ...(byAccount ? [{ which: 'account' as const, max: deps.perAccount, ...byAccount }] : []),
        ];
      }
    } catch (err) {
      throw new ProblemError('unavailable', SIGN_IN_UNAVAILABLE, { headers: { 'retry-after': '60' }, cause: err });
    }
    const over = counts.find((c) => c.current > c.max);
    if (over) {
      const seconds = Math.max(1, Math.ceil(over.ttl / 1000));
      throw new ProblemError('rateLimited', `Too many sign-in attempts for this ${over.which}; retry in ${seconds} s.`, {
        headers: { 'retry-after': String(seconds) },
        extensions: { limit: `sign-in per ${over.which}` },
      });
    }
  };
}

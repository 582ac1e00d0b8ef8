import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * "This browser signed in as this owner before": a long-lived cookie set at each successful
 * sign-in, `v1.<ownerId>.<deviceId>.<mac>`, where the MAC (HMAC-SHA-256 under a key derived from
 * DASHBOARD_SECRET_KEYS) binds the random device id to the owner. The sign-in throttle counts a
 * known device's attempts on its own budget instead of the email's and account's, so an
 * attacker's failures (from browsers without the cookie) cannot lock the owner out of the
 * browsers they use. The cookie proves nothing about the password: it only picks the budget.
 */
export const DEVICE_COOKIE = 'ingest_device';
export const DEVICE_COOKIE_MAX_AGE_SECONDS = 180 * 24 * 60 * 60;

export interface KnownDevices {
  /** A cookie value for this owner: the browser's device id when it had one, else a new one. */
  issue(ownerId: string, deviceId?: string): string;
  /** The device id when the cookie is valid and names this owner; undefined otherwise. */
  deviceOf(cookie: string | undefined, ownerId: string): string | undefined;
}

/** `macKeys[0]` signs; every key verifies (rotation). */
export function createKnownDevices(macKeys: readonly Buffer[]): KnownDevices {
  const [signingKey] = macKeys;
  if (!signingKey) throw new Error('known devices need at least one key');
  const mac = (key: Buffer, body: string) => createHmac('sha256', key).update(body).digest();
  return {
    issue(ownerId, deviceId) {
      const body = `v1.${ownerId}.${deviceId ?? randomBytes(16).toString('base64url')}`;
      return `${body}.${mac(signingKey, body).toString('base64url')}`;
    },
    deviceOf(cookie, ownerId) {
      if (!cookie || cookie.length > 256) return undefined;
      const parts = cookie.split('.');
      if (parts.length !== 4 || parts[0] !== 'v1' || parts[1] !== ownerId) return undefined;
      const body = parts.slice(0, 3).join('.');
      // The MAC's text is compared, not its decoded bytes: base64url's last character carries
      // unused bits, so decoding maps several texts to one MAC and a changed cookie would pass.
      const given = Buffer.from(parts[3] ?? '', 'utf8');
      const ok = macKeys.some((key) => {
        const expected = Buffer.from(mac(key, body).toString('base64url'), 'utf8');
        return given.length === expected.length && timingSafeEqual(given, expected);
      });
      return ok ? parts[2] : undefined;
    },
  };
}

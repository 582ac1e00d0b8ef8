/**
 * Where a request carries its API key. Pure: the auth hook then looks the key up; every way of
 * presenting a bad key ends in the same 401, so no carrier tells an attacker more than another.
 */
export type KeyCarrier = 'bearer' | 'basic' | 'body';

/** The longest Authorization value we decode: a key is ~60 characters; nothing legitimate is longer. */
const MAX_BASIC_CREDENTIALS = 1_024;

/**
 * - `bearer`: `Authorization: Bearer <key>`.
 * - `basic`: the same, or `Authorization: Basic base64(<key>:)`, the key as user name and any
 *   password (Segment's and RudderStack's server SDKs send the write key so, with an empty one).
 * - `body`: a `writeKey` string member of the parsed JSON body (Segment's browser and mobile SDKs).
 */
export function presentedKey(carrier: KeyCarrier, authorization: string | undefined, body: unknown): string | undefined {
  if (carrier === 'body') {
    const writeKey = body !== null && typeof body === 'object' ? (body as { writeKey?: unknown }).writeKey : undefined;
    return typeof writeKey === 'string' && writeKey.length > 0 ? writeKey : undefined;
  }
  const header = authorization?.trim() ?? '';
  const bearer = /^Bearer ([^\s]+)$/i.exec(header)?.[1];
  if (bearer !== undefined || carrier === 'bearer') return bearer;
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header)?.[1];
  if (basic === undefined || basic.length > MAX_BASIC_CREDENTIALS) return undefined;
  const decoded = Buffer.from(basic, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon === -1 ? decoded : decoded.slice(0, colon);
  return user.length > 0 ? user : undefined;
}

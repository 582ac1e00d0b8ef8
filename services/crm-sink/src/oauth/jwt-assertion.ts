import { createPrivateKey, createSign } from 'node:crypto';
import { AppError } from '@ingest/platform';

/**
 * The signed assertion of Salesforce's OAuth 2.0 JWT bearer flow (RFC 7523): RS256 over
 * {iss: consumer key, sub: username, aud: login URL, exp: within 3 minutes}. node:crypto signs
 * it in one call; no JOSE library is needed for one fixed algorithm and four claims.
 */
export function salesforceJwtAssertion(input: { clientId: string; username: string; audience: string; privateKeyPem: string; nowMs: number }): string {
  let key;
  try {
    key = createPrivateKey(input.privateKeyPem);
  } catch {
    throw new AppError('crm_oauth_key_invalid', 'the JWT bearer private key is not a PEM private key');
  }
  const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const header = b64({ alg: 'RS256', typ: 'JWT' });
  const claims = b64({ iss: input.clientId, sub: input.username, aud: input.audience, exp: Math.floor(input.nowMs / 1000) + 180 });
  const signature = createSign('RSA-SHA256').update(`${header}.${claims}`).sign(key).toString('base64url');
  return `${header}.${claims}.${signature}`;
}

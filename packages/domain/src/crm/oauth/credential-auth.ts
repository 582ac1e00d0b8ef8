import { createHash } from 'node:crypto';
import type { StoredCrmCredential } from '../../control-plane/types.js';

/**
 * How a stored CRM credential authenticates: the optional `auth` object of its clear settings
 * (versioned, `v: 1`). A record without `auth` is a bare token, as every record written before
 * OAuth: it keeps working unchanged. A newer writer's `auth` (another `v` or `kind`) is reported
 * as unknown, so the sink refuses the credential with `unknown_version` instead of misusing it.
 *
 * - `oauth`: authorization-code grant through the dashboard; sealed `accessToken` and
 *   `refreshToken`; crm-sink refreshes with the deployment's OAuth app (CRM_OAUTH_*).
 * - `jwt-bearer` (Salesforce): sealed `privateKey`; crm-sink signs an assertion for `username`
 *   with the connected app's consumer key `clientId` and gets access tokens from `loginUrl`.
 */
export interface OAuthAuth {
  v: 1;
  kind: 'oauth';
  /** The OAuth app's client id the tokens were issued to. */
  clientId: string;
  /** A new one per connection (16 hex): tokens the sink keeps are bound to it. */
  connectionId: string;
  /** When the access token in the record expires (ISO 8601). */
  expiresAt?: string;
  scope?: string;
  /** Who connected it (owner:<email>). */
  connectedBy?: string;
}

export interface JwtBearerAuth {
  v: 1;
  kind: 'jwt-bearer';
  clientId: string;
  username: string;
  /** Default https://login.salesforce.com. */
  loginUrl?: string;
}

export type CredentialAuth = { kind: 'token' } | OAuthAuth | JwtBearerAuth | { kind: 'unknown'; reason: string };

export function credentialAuth(settings: Record<string, unknown>): CredentialAuth {
  const auth = settings.auth;
  if (auth === undefined) return { kind: 'token' };
  if (typeof auth !== 'object' || auth === null) return { kind: 'unknown', reason: 'auth is not an object' };
  const a = auth as Record<string, unknown>;
  if (a.v !== 1) return { kind: 'unknown', reason: `auth version ${String(a.v)} is not known to this release` };
  if (a.kind === 'oauth' && typeof a.clientId === 'string' && typeof a.connectionId === 'string') return a as unknown as OAuthAuth;
  if (a.kind === 'jwt-bearer' && typeof a.clientId === 'string' && typeof a.username === 'string') return a as unknown as JwtBearerAuth;
  return { kind: 'unknown', reason: `auth kind ${String(a.kind)} is not known to this release` };
}

/**
 * The connection a stored credential stands for: the OAuth connection id, else one derived from
 * the record's write (a JWT bearer credential put again is a new connection).
 */
export function connectionIdOf(stored: Pick<StoredCrmCredential, 'credential' | 'updatedAt' | 'sealed'>, auth: CredentialAuth): string {
  if (auth.kind === 'oauth') return auth.connectionId;
  return createHash('sha256')
    .update(`${stored.updatedAt}|${stored.sealed?.tag ?? ''}`)
    .digest('hex')
    .slice(0, 16);
}

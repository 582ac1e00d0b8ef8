import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { OAuthApp } from './oauth.config.js';

/**
 * The browser half of the authorization-code flow (RFC 6749 with PKCE, RFC 7636): a random
 * state and code verifier per attempt, the S256 challenge, the authorize URL. Pure, so the rules
 * are unit-tested apart from the routes that keep the state.
 */
export const STATE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** 32 random bytes, base64url (43 characters): states, verifiers, binding nonces. */
export function randomUrlToken(): string {
  return randomBytes(32).toString('base64url');
}

/** RFC 7636 S256: BASE64URL(SHA256(ASCII(code_verifier))). */
export function pkceChallenge(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time comparison of two secrets of any length (each hashed first). */
export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

export function authorizeUrl(app: OAuthApp, options: { redirectUri: string; state: string; codeVerifier: string }): string {
  const url = new URL(app.authorizeUrl);
  url.searchParams.set('response_type', 'code');
  url.searchParams.set('client_id', app.clientId);
  url.searchParams.set('redirect_uri', options.redirectUri);
  url.searchParams.set('scope', app.scopes);
  url.searchParams.set('state', options.state);
  url.searchParams.set('code_challenge', pkceChallenge(options.codeVerifier));
  url.searchParams.set('code_challenge_method', 'S256');
  // Salesforce: ask for consent again on reconnect, so a new refresh token is always issued.
  if (app.provider === 'salesforce') url.searchParams.set('prompt', 'login consent');
  return url.toString();
}

/** What the CRM sent back to the callback, checked before anything is looked up. */
export type CallbackInput =
  | { kind: 'code'; state: string; code: string }
  | { kind: 'error'; state: string | undefined; error: string; description: string | undefined }
  | { kind: 'invalid'; reason: string };

const MAX_PARAM = 2048;
const OAUTH_ERROR = /^[\x20-\x21\x23-\x5B\x5D-\x7E]{1,100}$/;

export function parseCallback(query: Record<string, unknown>): CallbackInput {
  const text = (name: string) => {
    const value = query[name];
    return typeof value === 'string' && value.length > 0 && value.length <= MAX_PARAM ? value : undefined;
  };
  const state = text('state');
  const error = text('error');
  if (error !== undefined) {
    const description = text('error_description');
    return {
      kind: 'error',
      state: state !== undefined && STATE_PATTERN.test(state) ? state : undefined,
      error: OAUTH_ERROR.test(error) ? error : 'error',
      description: description?.slice(0, 200),
    };
  }
  if (state === undefined || !STATE_PATTERN.test(state)) return { kind: 'invalid', reason: 'the state parameter is missing or malformed' };
  const code = text('code');
  if (code === undefined) return { kind: 'invalid', reason: 'the code parameter is missing' };
  return { kind: 'code', state, code };
}

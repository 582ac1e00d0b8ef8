import { AppError } from '@ingest/platform';
import type { OAuthApp } from './oauth.config.js';

/**
 * The calls to a CRM's token and revocation endpoints (RFC 6749 section 4.1.3 and 6, RFC 7523
 * for Salesforce's JWT bearer flow, RFC 7009-style revocation), over a sender the service
 * provides: the console's and crm-sink's HTTP clients differ (crm-sink's checks every address it
 * connects to), the protocol does not. Answers are read into a TokenSet or an error with a code:
 *
 * - `crm_oauth_refused` (not retryable): the authorization server said no for good: `invalid_grant`
 *   (a revoked, expired or replayed code or refresh token), `invalid_client`, any other 4xx.
 * - `crm_oauth_unavailable` (retryable): 5xx, 429, a network failure, an unreadable answer.
 *
 * Messages carry the server's `error` and a bounded `error_description`, never a token.
 */
export interface TokenSet {
  accessToken: string;
  /** Absent when the server keeps the old one (HubSpot, Salesforce without rotation). */
  refreshToken?: string;
  expiresAtMs: number;
  /** Salesforce: the org's instance. */
  instanceUrl?: string;
  scope?: string;
}

export interface FormRequest {
  method: 'POST' | 'DELETE';
  url: string;
  form?: Record<string, string>;
}

/** Sends a form (application/x-www-form-urlencoded) and returns the status and parsed JSON body; throws on network failure. */
export type FormSender = (request: FormRequest) => Promise<{ status: number; body: unknown }>;

export const OAUTH_REFUSED = 'crm_oauth_refused';
export const OAUTH_UNAVAILABLE = 'crm_oauth_unavailable';

const MAX_TOKEN_LENGTH = 4096;

function describe(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const { error, error_description: description, message } = body as Record<string, unknown>;
  const parts = [error, description ?? message].filter((p): p is string => typeof p === 'string').map((p) => p.slice(0, 200));
  return parts.length > 0 ? `: ${parts.join(': ')}` : '';
}

/** The OAuth `error` of a refusal (e.g. `invalid_grant`), when the body has one. */
export function oauthErrorOf(err: unknown): string | undefined {
  return err instanceof AppError && err.cause && typeof err.cause === 'object' && 'oauthError' in err.cause
    ? String((err.cause as { oauthError: unknown }).oauthError)
    : undefined;
}

async function call(send: FormSender, request: FormRequest, what: string): Promise<unknown> {
  let answer: { status: number; body: unknown };
  try {
    answer = await send(request);
  } catch (err) {
    throw new AppError(OAUTH_UNAVAILABLE, `${what}: the authorization server did not answer (${err instanceof Error ? err.message.slice(0, 200) : 'error'})`, {
      retryable: true,
    });
  }
  const { status, body } = answer;
  if (status >= 200 && status < 300) return body;
  const oauthError = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  const cause = { status, oauthError: typeof oauthError === 'string' ? oauthError.slice(0, 100) : undefined };
  if (status === 429 || status >= 500) throw new AppError(OAUTH_UNAVAILABLE, `${what}: HTTP ${status}${describe(body)}`, { retryable: true, cause });
  throw new AppError(OAUTH_REFUSED, `${what}: HTTP ${status}${describe(body)}`, { cause });
}

function tokenSet(body: unknown, defaultTtlMs: number, nowMs: number, what: string): TokenSet {
  const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' && v.length > 0 && v.length <= MAX_TOKEN_LENGTH ? v : undefined);
  const accessToken = str(b.access_token);
  if (!accessToken) throw new AppError(OAUTH_UNAVAILABLE, `${what}: the answer has no usable access_token`, { retryable: true });
  const expiresIn = typeof b.expires_in === 'number' ? b.expires_in : typeof b.expires_in === 'string' ? Number(b.expires_in) : Number.NaN;
  const ttlMs = Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn * 1000 : defaultTtlMs;
  const refreshToken = str(b.refresh_token);
  const instanceUrl = str(b.instance_url);
  const scope = str(b.scope);
  return {
    accessToken,
    expiresAtMs: nowMs + ttlMs,
    ...(refreshToken ? { refreshToken } : {}),
    ...(instanceUrl ? { instanceUrl } : {}),
    ...(scope ? { scope: scope.slice(0, 1000) } : {}),
  };
}

export async function exchangeCode(
  send: FormSender,
  app: OAuthApp,
  input: { code: string; codeVerifier: string; redirectUri: string; nowMs: number },
): Promise<TokenSet> {
  const body = await call(
    send,
    {
      method: 'POST',
      url: app.tokenUrl,
      form: {
        grant_type: 'authorization_code',
        code: input.code,
        code_verifier: input.codeVerifier,
        redirect_uri: input.redirectUri,
        client_id: app.clientId,
        client_secret: app.clientSecret,
      },
    },
    'code exchange',
  );
  return tokenSet(body, app.defaultTokenTtlMs, input.nowMs, 'code exchange');
}

export async function refreshGrant(send: FormSender, app: OAuthApp, input: { refreshToken: string; nowMs: number }): Promise<TokenSet> {
  const body = await call(
    send,
    {
      method: 'POST',
      url: app.tokenUrl,
      form: { grant_type: 'refresh_token', refresh_token: input.refreshToken, client_id: app.clientId, client_secret: app.clientSecret },
    },
    'token refresh',
  );
  return tokenSet(body, app.defaultTokenTtlMs, input.nowMs, 'token refresh');
}

/** Salesforce's OAuth 2.0 JWT bearer flow: a signed assertion buys an access token (no refresh token). */
export async function jwtBearerGrant(send: FormSender, input: { tokenUrl: string; assertion: string; defaultTtlMs: number; nowMs: number }): Promise<TokenSet> {
  const body = await call(
    send,
    { method: 'POST', url: input.tokenUrl, form: { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: input.assertion } },
    'JWT bearer grant',
  );
  const set = tokenSet(body, input.defaultTtlMs, input.nowMs, 'JWT bearer grant');
  // A refresh token in this flow is not expected; none is kept.
  const { refreshToken: _ignored, ...rest } = set;
  return rest;
}

/**
 * Revokes a grant by its refresh token. HubSpot: DELETE /oauth/v1/refresh-tokens/{token};
 * Salesforce: POST /services/oauth2/revoke (revoking the refresh token ends its access tokens).
 */
export async function revokeRefreshToken(
  send: FormSender,
  app: OAuthApp,
  options: { refreshToken: string; hubspotApiUrl: string; salesforceLoginUrl: string },
): Promise<void> {
  if (app.provider === 'hubspot') {
    await call(send, { method: 'DELETE', url: `${options.hubspotApiUrl}/oauth/v1/refresh-tokens/${encodeURIComponent(options.refreshToken)}` }, 'revocation');
  } else {
    await call(send, { method: 'POST', url: `${options.salesforceLoginUrl}/services/oauth2/revoke`, form: { token: options.refreshToken } }, 'revocation');
  }
}

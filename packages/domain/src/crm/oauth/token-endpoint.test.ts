import { AppError } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { credentialAuth } from './credential-auth.js';
import type { OAuthApp } from './oauth.config.js';
import { exchangeCode, type FormRequest, OAUTH_REFUSED, OAUTH_UNAVAILABLE, oauthErrorOf, refreshGrant, revokeRefreshToken } from './token-endpoint.js';

const app: OAuthApp = {
  provider: 'hubspot',
  clientId: 'cid',
  clientSecret: 'csecret',
  scopes: 'oauth',
  authorizeUrl: 'https://auth.example/authorize',
  tokenUrl: 'https://api.example/oauth/v1/token',
  defaultTokenTtlMs: 7_200_000,
};
const NOW = 1_000_000;

function sender(status: number, body: unknown) {
  const sent: FormRequest[] = [];
  return { sent, send: async (request: FormRequest) => (sent.push(request), { status, body }) };
}

async function failure(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a failure');
}

describe('token endpoint', () => {
  it('exchanges a code with the verifier, redirect URI and client credentials, and reads the token set', async () => {
    const s = sender(200, { access_token: 'at', refresh_token: 'rt', expires_in: 1800, token_type: 'bearer' });
    const tokens = await exchangeCode(s.send, app, { code: 'c', codeVerifier: 'v', redirectUri: 'https://x/cb', nowMs: NOW });
    expect(tokens).toEqual({ accessToken: 'at', refreshToken: 'rt', expiresAtMs: NOW + 1_800_000 });
    expect(s.sent[0]).toEqual({
      method: 'POST',
      url: app.tokenUrl,
      form: { grant_type: 'authorization_code', code: 'c', code_verifier: 'v', redirect_uri: 'https://x/cb', client_id: 'cid', client_secret: 'csecret' },
    });
  });

  it('takes the default lifetime when the answer has none (Salesforce) and keeps its instance URL', async () => {
    const s = sender(200, { access_token: 'at', instance_url: 'https://acme.my.salesforce.com' });
    expect(await refreshGrant(s.send, app, { refreshToken: 'rt', nowMs: NOW })).toEqual({
      accessToken: 'at',
      expiresAtMs: NOW + 7_200_000,
      instanceUrl: 'https://acme.my.salesforce.com',
    });
  });

  it('invalid_grant is a refusal with its OAuth error; 5xx, 429 and network failures are retryable; no token is echoed', async () => {
    const refused = await failure(
      refreshGrant(sender(400, { error: 'invalid_grant', error_description: 'expired access/refresh token' }).send, app, {
        refreshToken: 'rt-secret',
        nowMs: NOW,
      }),
    );
    expect(refused).toMatchObject({ code: OAUTH_REFUSED, retryable: false });
    expect(oauthErrorOf(refused)).toBe('invalid_grant');
    expect(refused.message).not.toContain('rt-secret');
    expect(await failure(refreshGrant(sender(503, 'busy').send, app, { refreshToken: 'rt', nowMs: NOW }))).toMatchObject({
      code: OAUTH_UNAVAILABLE,
      retryable: true,
    });
    expect(await failure(refreshGrant(sender(429, {}).send, app, { refreshToken: 'rt', nowMs: NOW }))).toMatchObject({ code: OAUTH_UNAVAILABLE });
    const down = async () => {
      throw new Error('ECONNREFUSED');
    };
    expect(await failure(refreshGrant(down, app, { refreshToken: 'rt', nowMs: NOW }))).toMatchObject({ code: OAUTH_UNAVAILABLE });
    expect(await failure(refreshGrant(sender(200, { token_type: 'bearer' }).send, app, { refreshToken: 'rt', nowMs: NOW }))).toMatchObject({
      code: OAUTH_UNAVAILABLE,
    });
  });

  it('revokes HubSpot grants with DELETE on the refresh token and Salesforce ones with POST /revoke', async () => {
    const s = sender(204, undefined);
    const urls = { hubspotApiUrl: 'https://api.example', salesforceLoginUrl: 'https://login.example' };
    await revokeRefreshToken(s.send, app, { refreshToken: 'r/t', ...urls });
    await revokeRefreshToken(s.send, { ...app, provider: 'salesforce' }, { refreshToken: 'rt', ...urls });
    expect(s.sent).toEqual([
      { method: 'DELETE', url: 'https://api.example/oauth/v1/refresh-tokens/r%2Ft' },
      { method: 'POST', url: 'https://login.example/services/oauth2/revoke', form: { token: 'rt' } },
    ]);
  });
});

describe('credentialAuth', () => {
  it('a record without auth (every record before OAuth) is a bare token', () => {
    expect(credentialAuth({ type: 'hubspot' })).toEqual({ kind: 'token' });
  });

  it('reads v1 oauth and jwt-bearer, and reports a newer version or kind as unknown instead of guessing', () => {
    expect(credentialAuth({ type: 'hubspot', auth: { v: 1, kind: 'oauth', clientId: 'c', connectionId: '0123456789abcdef', extra: 1 } })).toMatchObject({
      kind: 'oauth',
    });
    expect(credentialAuth({ type: 'salesforce', auth: { v: 1, kind: 'jwt-bearer', clientId: 'c', username: 'u@x' } })).toMatchObject({ kind: 'jwt-bearer' });
    expect(credentialAuth({ type: 'hubspot', auth: { v: 2, kind: 'oauth' } })).toMatchObject({ kind: 'unknown' });
    expect(credentialAuth({ type: 'hubspot', auth: { v: 1, kind: 'mtls' } })).toMatchObject({ kind: 'unknown' });
  });
});

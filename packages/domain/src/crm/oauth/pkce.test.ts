import { describe, expect, it } from 'vitest';
import type { OAuthApp } from './oauth.config.js';
import { authorizeUrl, parseCallback, pkceChallenge, randomUrlToken, STATE_PATTERN } from './pkce.js';

const app: OAuthApp = {
  provider: 'hubspot',
  clientId: 'client-1',
  clientSecret: 'secret',
  scopes: 'oauth crm.objects.contacts.write',
  authorizeUrl: 'https://app.hubspot.com/oauth/authorize',
  tokenUrl: 'https://api.hubapi.com/oauth/v1/token',
  defaultTokenTtlMs: 1_800_000,
};

describe('PKCE and state', () => {
  it('computes the S256 challenge of RFC 7636 appendix B', () => {
    expect(pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk')).toBe('E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM');
  });

  it('makes 43-character url-safe random states and verifiers, never the same twice', () => {
    const tokens = new Set(Array.from({ length: 100 }, randomUrlToken));
    expect(tokens.size).toBe(100);
    for (const t of tokens) expect(t).toMatch(STATE_PATTERN);
  });

  it('builds the authorize URL with the challenge (never the verifier), the state and the redirect URI', () => {
    const url = new URL(authorizeUrl(app, { redirectUri: 'https://ingest.example.com/cb', state: 's'.repeat(43), codeVerifier: 'v'.repeat(43) }));
    expect(Object.fromEntries(url.searchParams)).toEqual({
      response_type: 'code',
      client_id: 'client-1',
      redirect_uri: 'https://ingest.example.com/cb',
      scope: 'oauth crm.objects.contacts.write',
      state: 's'.repeat(43),
      code_challenge: pkceChallenge('v'.repeat(43)),
      code_challenge_method: 'S256',
    });
    expect(url.toString()).not.toContain('v'.repeat(43));
  });

  it('asks Salesforce for consent again, so a reconnect always issues a refresh token', () => {
    const url = new URL(authorizeUrl({ ...app, provider: 'salesforce' }, { redirectUri: 'https://x/cb', state: 's', codeVerifier: 'v' }));
    expect(url.searchParams.get('prompt')).toBe('login consent');
  });
});

describe('parseCallback', () => {
  const state = 'a'.repeat(43);
  it('reads a code with its state', () => {
    expect(parseCallback({ state, code: 'c-1' })).toEqual({ kind: 'code', state, code: 'c-1' });
  });

  it('refuses a missing or malformed state, a missing code, arrays and oversized values', () => {
    expect(parseCallback({ code: 'c' })).toMatchObject({ kind: 'invalid' });
    expect(parseCallback({ state: 'short', code: 'c' })).toMatchObject({ kind: 'invalid' });
    expect(parseCallback({ state })).toMatchObject({ kind: 'invalid', reason: 'the code parameter is missing' });
    expect(parseCallback({ state: [state, state], code: 'c' })).toMatchObject({ kind: 'invalid' });
    expect(parseCallback({ state, code: 'c'.repeat(2049) })).toMatchObject({ kind: 'invalid' });
  });

  it('reads an error from the CRM, bounding its description and dropping characters a page should not echo', () => {
    const parsed = parseCallback({ state, error: 'access_denied', error_description: 'd'.repeat(500) });
    expect(parsed).toMatchObject({ kind: 'error', state, error: 'access_denied' });
    expect(parsed.kind === 'error' && parsed.description?.length).toBe(200);
    expect(parseCallback({ error: '<script>' })).toMatchObject({ kind: 'error', error: '<script>', state: undefined });
    expect(parseCallback({ error: 'bad"quote' })).toMatchObject({ kind: 'error', error: 'error' });
  });
});

import { createHash, createPublicKey, createVerify, randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';

/**
 * A fake OAuth 2.0 authorization server for HubSpot and Salesforce, on 127.0.0.1, over real HTTP.
 * It behaves as the real ones do where the sink and the console depend on it:
 *
 * - authorize (`/oauth/authorize`, `/services/oauth2/authorize`): consent is given at once (or
 *   refused with `error=access_denied` after `denyNext()`), answered with a 302 to the redirect
 *   URI carrying `code` and `state`. A code lives 10 minutes and is single-use; a replayed code
 *   is refused with `invalid_grant` and revokes the grant it issued (RFC 6749 section 4.1.2).
 * - token (`/oauth/v1/token`, `/services/oauth2/token`), form-encoded: the authorization code
 *   with PKCE S256 and the exact redirect URI, `refresh_token`, and Salesforce's JWT bearer grant
 *   (RS256, checked against the registered certificate's key, `aud` = the login URL).
 *   Access tokens live `accessTtlMs`; HubSpot answers `expires_in`, Salesforce does not (as the
 *   real one). With `rotateRefreshTokens`, every refresh returns a new refresh token and the old
 *   one stops working (Salesforce's rotation setting; HubSpot does not rotate).
 * - revoke (`DELETE /oauth/v1/refresh-tokens/:token`, `POST /services/oauth2/revoke`): the grant
 *   and all its access tokens stop working.
 * Errors use RFC 6749's `{error, error_description}` with 400 (401 for `invalid_client`).
 *
 * Differences from the real servers: consent needs no user, one client per server, no scopes
 * checked, HubSpot's revoke answers 204 (the real one also does) but Salesforce's too (real: 200).
 */
export interface FakeOAuthOptions {
  clientId?: string;
  clientSecret?: string;
  accessTtlMs?: number;
  rotateRefreshTokens?: boolean;
  /** Salesforce's token answers name the org's instance. */
  instanceUrl?: string;
  /** JWT bearer: consumer key -> the PEM public key of the certificate uploaded to the connected app. */
  jwtKeys?: Record<string, string>;
}

export interface FakeOAuthCall {
  path: string;
  grantType?: string;
  status: number;
}

export interface FakeOAuthServer {
  readonly url: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly calls: readonly FakeOAuthCall[];
  /** Whether the fake CRM should accept this bearer token now. */
  acceptsAccessToken(token: string): boolean;
  /** Revokes every grant, as an admin removing the app's access in the CRM would. */
  revokeAll(): void;
  /** Ends every access token issued so far (a session timeout, an admin logging sessions out); grants stay. */
  expireAccessTokens(): void;
  /** The next authorize request is refused with `error=access_denied`. */
  denyNext(): void;
  /** How many refresh_token grants were answered with new tokens. */
  refreshCount(): number;
  /** Grants not revoked. */
  activeGrants(): number;
  stop(): Promise<void>;
}

interface Grant {
  id: string;
  refreshToken?: string;
  revoked: boolean;
}

interface Code {
  grantId: string;
  redirectUri: string;
  challenge?: string;
  expiresAtMs: number;
  used: boolean;
}

const OAUTH_PATH = /^\/(oauth\/|services\/oauth2\/)/;
const token = (prefix: string) => `${prefix}-${randomBytes(18).toString('base64url')}`;

/** The fake's routes on an app of the caller's (the fake CRM: HubSpot's API and OAuth share a host); `baseUrl` once listening. */
export function registerFakeOAuth(app: FastifyInstance, options: FakeOAuthOptions, baseUrl: () => string): Omit<FakeOAuthServer, 'url' | 'stop'> {
  let url = '';
  const controller = routes(app, options, () => (url ||= baseUrl()));
  return controller;
}

export async function startFakeOAuthServer(options: FakeOAuthOptions = {}): Promise<FakeOAuthServer> {
  const app: FastifyInstance = Fastify({ logger: false });
  let url = '';
  const controller = routes(app, options, () => url);
  url = await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    ...controller,
    get url() {
      return url;
    },
    stop: () => app.close(),
  };
}

function routes(app: FastifyInstance, options: FakeOAuthOptions, baseUrl: () => string): Omit<FakeOAuthServer, 'url' | 'stop'> {
  const clientId = options.clientId ?? 'fake-client-id';
  const clientSecret = options.clientSecret ?? 'fake-client-secret';
  const ttl = options.accessTtlMs ?? 30 * 60_000;
  const grants = new Map<string, Grant>();
  const codes = new Map<string, Code>();
  const accessTokens = new Map<string, { grantId: string; expiresAtMs: number }>();
  const calls: FakeOAuthCall[] = [];
  let deny = false;
  let refreshes = 0;

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  app.addHook('onResponse', async (request, reply) => {
    if (!OAUTH_PATH.test(request.url)) return;
    const body = request.body as Record<string, string> | undefined;
    calls.push({ path: request.url.split('?')[0] ?? '', ...(body?.grant_type ? { grantType: body.grant_type } : {}), status: reply.statusCode });
  });

  const fail = (reply: FastifyReply, error: string, description: string, status = 400) => reply.code(status).send({ error, error_description: description });

  function issue(grant: Grant, provider: 'hubspot' | 'salesforce', withRefresh: boolean) {
    const access = token('at');
    accessTokens.set(access, { grantId: grant.id, expiresAtMs: Date.now() + ttl });
    if (withRefresh && (!grant.refreshToken || options.rotateRefreshTokens)) grant.refreshToken = token('rt');
    return {
      access_token: access,
      token_type: 'bearer',
      ...(withRefresh ? { refresh_token: grant.refreshToken } : {}),
      ...(provider === 'hubspot' ? { expires_in: Math.round(ttl / 1000) } : { instance_url: options.instanceUrl ?? baseUrl(), issued_at: String(Date.now()) }),
    };
  }

  function authorize(query: Record<string, string>, reply: FastifyReply) {
    const target = new URL(query.redirect_uri ?? '');
    if (query.client_id !== clientId) return fail(reply, 'invalid_client', 'unknown client');
    if (deny) {
      deny = false;
      target.searchParams.set('error', 'access_denied');
      target.searchParams.set('error_description', 'end-user denied authorization');
    } else {
      const grant: Grant = { id: token('g'), revoked: false };
      grants.set(grant.id, grant);
      const code = token('code');
      codes.set(code, {
        grantId: grant.id,
        redirectUri: query.redirect_uri ?? '',
        ...(query.code_challenge ? { challenge: query.code_challenge } : {}),
        expiresAtMs: Date.now() + 600_000,
        used: false,
      });
      target.searchParams.set('code', code);
    }
    if (query.state) target.searchParams.set('state', query.state);
    return reply.code(302).header('location', target.toString()).send();
  }

  function verifyJwt(assertion: string): { ok: true } | { ok: false; why: string } {
    const [header, claims, signature] = assertion.split('.');
    if (!header || !claims || !signature) return { ok: false, why: 'malformed assertion' };
    let c: { iss?: string; sub?: string; aud?: string; exp?: number };
    try {
      c = JSON.parse(Buffer.from(claims, 'base64url').toString('utf8')) as typeof c;
    } catch {
      return { ok: false, why: 'malformed assertion' };
    }
    const pem = c.iss ? options.jwtKeys?.[c.iss] : undefined;
    if (!pem) return { ok: false, why: 'client identifier invalid' };
    const valid = createVerify('RSA-SHA256').update(`${header}.${claims}`).verify(createPublicKey(pem), Buffer.from(signature, 'base64url'));
    if (!valid) return { ok: false, why: 'invalid assertion signature' };
    if (c.aud !== baseUrl()) return { ok: false, why: 'audience invalid' };
    if (!c.exp || c.exp * 1000 < Date.now()) return { ok: false, why: 'expired authorization code' };
    if (!c.sub) return { ok: false, why: 'user hasn\u2019t approved this consumer' };
    return { ok: true };
  }

  function tokenEndpoint(provider: 'hubspot' | 'salesforce') {
    return async (request: { body: unknown }, reply: FastifyReply) => {
      const f = (request.body ?? {}) as Record<string, string>;
      if (f.grant_type === 'urn:ietf:params:oauth:grant-type:jwt-bearer') {
        const check = verifyJwt(f.assertion ?? '');
        if (!check.ok) return fail(reply, 'invalid_grant', check.why);
        const grant: Grant = { id: token('g'), revoked: false };
        grants.set(grant.id, grant);
        return issue(grant, provider, false);
      }
      if (f.client_id !== clientId || f.client_secret !== clientSecret) return fail(reply, 'invalid_client', 'invalid client credentials', 401);
      if (f.grant_type === 'authorization_code') {
        const code = codes.get(f.code ?? '');
        if (!code || code.expiresAtMs < Date.now()) return fail(reply, 'invalid_grant', 'invalid authorization code');
        const grant = grants.get(code.grantId) as Grant;
        if (code.used) {
          // A replayed code: refused, and what it issued is revoked.
          grant.revoked = true;
          return fail(reply, 'invalid_grant', 'authorization code already used');
        }
        code.used = true;
        if (code.redirectUri !== f.redirect_uri) return fail(reply, 'invalid_grant', 'redirect_uri mismatch');
        if (code.challenge) {
          const computed = createHash('sha256')
            .update(f.code_verifier ?? '', 'ascii')
            .digest('base64url');
          if (computed !== code.challenge) return fail(reply, 'invalid_grant', 'invalid code verifier');
        }
        return issue(grant, provider, true);
      }
      if (f.grant_type === 'refresh_token') {
        const grant = [...grants.values()].find((g) => g.refreshToken === f.refresh_token);
        if (!grant || grant.revoked) return fail(reply, 'invalid_grant', 'expired access/refresh token');
        refreshes += 1;
        return issue(grant, provider, true);
      }
      return fail(reply, 'unsupported_grant_type', 'grant type not supported');
    };
  }

  function revoke(refreshOrAccess: string, reply: FastifyReply) {
    const grantId = [...grants.values()].find((g) => g.refreshToken === refreshOrAccess)?.id ?? accessTokens.get(refreshOrAccess)?.grantId;
    const grant = grantId ? grants.get(grantId) : undefined;
    if (!grant || grant.revoked) return fail(reply, 'invalid_token', 'token not found', 400);
    grant.revoked = true;
    return reply.code(204).send();
  }

  app.get('/oauth/authorize', async (request, reply) => authorize(request.query as Record<string, string>, reply));
  app.get('/services/oauth2/authorize', async (request, reply) => authorize(request.query as Record<string, string>, reply));
  app.post('/oauth/v1/token', tokenEndpoint('hubspot'));
  app.post('/services/oauth2/token', tokenEndpoint('salesforce'));
  app.delete('/oauth/v1/refresh-tokens/:token', async (request, reply) => revoke((request.params as { token: string }).token, reply));
  app.post('/services/oauth2/revoke', async (request, reply) => revoke(((request.body ?? {}) as Record<string, string>).token ?? '', reply));

  return {
    clientId,
    clientSecret,
    calls,
    acceptsAccessToken(candidate) {
      const t = accessTokens.get(candidate);
      return t !== undefined && t.expiresAtMs > Date.now() && grants.get(t.grantId)?.revoked === false;
    },
    revokeAll() {
      for (const g of grants.values()) g.revoked = true;
    },
    expireAccessTokens() {
      for (const t of accessTokens.values()) t.expiresAtMs = 0;
    },
    denyNext() {
      deny = true;
    },
    refreshCount: () => refreshes,
    activeGrants: () => [...grants.values()].filter((g) => !g.revoked).length,
  };
}

import { randomBytes } from 'node:crypto';
import { CredentialName } from '@ingest/schemas';
import {
  authorizeUrl,
  connectionHealth,
  type ControlPlane,
  credentialAuth,
  type CrmCredential,
  decodeOAuthTokenState,
  exchangeCode,
  type FormSender,
  OAUTH_PROVIDERS,
  OAUTH_REFUSED,
  type OAuthApps,
  type OAuthProvider,
  type OAuthRevokeRequest,
  OAUTH_REVOKE_QUEUE_MAX,
  oauthRevokeQueueKey,
  oauthTokenKey,
  type OutboundPolicy,
  parseCallback,
  randomUrlToken,
  secretsEqual,
  sha256Hex,
  type StoredCrmCredential,
  type TokenSet,
} from '@ingest/domain';
import { AppError, type Redis } from '@ingest/platform';
import { type Auditor, ProblemError } from '@ingest/http';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { RouteLimits } from '../route-options.js';
import { dashboardOf } from '../session.guard.js';
import { type SessionStore, sessionRef } from '../session.store.js';
import { callbackPage } from './callback.page.js';
import { createOAuthStateStore, type PendingAuthorization, STATE_TTL_MS } from './oauth-state.store.js';

/**
 * Connecting HubSpot and Salesforce with OAuth from the dashboard (docs/crm-sync.md, "OAuth
 * connections"): the authorization-code flow with PKCE.
 *
 * - POST crm/oauth/{provider}/start (session + CSRF): a state bound to the session and this
 *   browser, the S256 challenge; answers the CRM's authorize URL for the page to navigate to.
 * - GET crm/oauth/callback (the redirect URI, CRM_OAUTH_REDIRECT_URL): takes the state once,
 *   checks the browser binding, exchanges the code with the verifier, seals the tokens for
 *   crm-sink and stores the credential, audits it. Every failure (a wrong or used state, a
 *   replayed code, an error from the CRM) is a plain page that says why; nothing is stored.
 * - GET crm/oauth/connections: the account's OAuth credentials and whether crm-sink found them
 *   broken; DELETE crm/oauth/connections/{name}: disconnect (tombstone, then crm-sink revokes).
 */
export interface CrmOAuthRoutesDeps {
  controlPlane: ControlPlane;
  redis: Redis;
  keyPrefix?: string;
  apps: OAuthApps;
  send: FormSender;
  /** Where a Salesforce org's instance URL may point (the credential's own check). */
  outboundPolicy: OutboundPolicy;
  auditor: Auditor;
  limits: RouteLimits;
  cookieSecure: boolean;
  /** The dashboard's sessions: a callback after the starting session ended (sign-out, expiry) stores nothing. */
  sessions: Pick<SessionStore, 'isLive'>;
  now: () => number;
}

export const OAUTH_BINDING_COOKIE = 'ingest_oauth';
const CALLBACK_PATH = '/dashboard/api/crm/oauth/callback';
const LABEL: Record<OAuthProvider, string> = { hubspot: 'HubSpot', salesforce: 'Salesforce' };

const ProviderParams = Type.Object({ provider: Type.Union(OAUTH_PROVIDERS.map((p) => Type.Literal(p))) });
const StartBody = Type.Object({ name: Type.Optional(CredentialName) }, { additionalProperties: false });
const NameParams = Type.Object({ name: CredentialName });

function connectionView(stored: StoredCrmCredential) {
  const auth = credentialAuth(stored.credential as Record<string, unknown>);
  return {
    name: stored.name,
    type: stored.credential.type,
    kind: auth.kind,
    updatedAt: stored.updatedAt,
    ...(auth.kind === 'oauth' && auth.connectedBy ? { connectedBy: auth.connectedBy } : {}),
    ...(stored.credential.type === 'salesforce' ? { instanceUrl: stored.credential.instanceUrl } : {}),
  };
}

export function crmOAuthRoutes(deps: CrmOAuthRoutesDeps): FastifyPluginAsync {
  const states = createOAuthStateStore({ redis: deps.redis, keyPrefix: deps.keyPrefix });
  const cp = deps.controlPlane;

  const appOf = (provider: OAuthProvider) => {
    const app = deps.apps.apps[provider];
    if (!app || deps.apps.redirectUrl === '')
      throw new ProblemError('notFound', `Connecting ${LABEL[provider]} with OAuth is not set up on this deployment (CRM_OAUTH_* settings).`);
    return app;
  };

  /** Queues the grant for crm-sink to revoke (the console cannot open the sealed tokens). */
  async function queueRevocation(request: FastifyRequest, stored: StoredCrmCredential): Promise<'queued' | 'skipped'> {
    const auth = credentialAuth(stored.credential as Record<string, unknown>);
    if (auth.kind !== 'oauth' || !stored.sealed || stored.credential.type === 'webhook') return 'skipped';
    const item: OAuthRevokeRequest = {
      v: 1,
      accountId: stored.accountId,
      name: stored.name,
      provider: stored.credential.type,
      connectionId: auth.connectionId,
      sealed: stored.sealed,
      credential: stored.credential,
      requestedAtMs: deps.now(),
    };
    const key = oauthRevokeQueueKey(deps.keyPrefix);
    try {
      if ((await deps.redis.llen(key)) >= OAUTH_REVOKE_QUEUE_MAX) {
        request.log.warn({ accountId: stored.accountId, credentialName: stored.name }, 'OAuth revocation queue full: grant not revoked');
        return 'skipped';
      }
      await deps.redis.rpush(key, JSON.stringify(item));
      return 'queued';
    } catch (err) {
      request.log.warn({ err, accountId: stored.accountId, credentialName: stored.name }, 'OAuth revocation could not be queued');
      return 'skipped';
    }
  }

  return async (app) => {
    app.post<{ Params: { provider: OAuthProvider }; Body: { name?: string } }>(
      '/crm/oauth/:provider/start',
      { ...deps.limits.api, schema: { hide: true, params: ProviderParams, body: StartBody } },
      async (request, reply) => {
        const { session, account, token } = dashboardOf(request);
        const { provider } = request.params;
        const oauthApp = appOf(provider);
        const name = request.body?.name ?? provider;
        const existing = cp.crmCredential(account.id, name);
        if (existing && existing.credential.type !== provider) {
          throw new ProblemError('conflict', `Credential ${name} is a ${existing.credential.type} credential; choose another name.`);
        }
        const state = randomUrlToken();
        const codeVerifier = randomUrlToken();
        const binding = randomUrlToken();
        const pending: PendingAuthorization = {
          v: 1,
          provider,
          name,
          accountId: account.id,
          ownerId: session.ownerId,
          email: session.email,
          sessionCreatedAtMs: session.createdAtMs,
          sessionRef: sessionRef(token),
          codeVerifier,
          bindingHash: sha256Hex(binding),
          createdAtMs: deps.now(),
        };
        if (!(await states.put(state, pending))) {
          throw new ProblemError('rateLimited', 'Too many connections started in the last 10 minutes; finish or wait for them to expire.');
        }
        void reply.setCookie(OAUTH_BINDING_COOKIE, binding, {
          httpOnly: true,
          secure: deps.cookieSecure,
          // Lax: it must come along on the CRM's top-level redirect back to the callback.
          sameSite: 'lax',
          path: CALLBACK_PATH,
          maxAge: STATE_TTL_MS / 1000,
        });
        request.log.info({ accountId: account.id, provider, credentialName: name }, 'dashboard: OAuth connection started');
        return { authorizeUrl: authorizeUrl(oauthApp, { redirectUri: deps.apps.redirectUrl, state, codeVerifier }) };
      },
    );

    app.get(
      '/crm/oauth/callback',
      { ...deps.limits.api, schema: { hide: true }, config: { ...deps.limits.api.config, dashboardPublic: true } },
      async (request, reply) => callback(request, reply),
    );

    async function callback(request: FastifyRequest, reply: FastifyReply) {
      const page = (status: number, outcome: { ok: boolean; title: string; detail: string }) => {
        void reply.clearCookie(OAUTH_BINDING_COOKIE, { path: CALLBACK_PATH });
        return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(callbackPage(outcome));
      };
      const refused = (detail: string, status = 400) => page(status, { ok: false, title: 'The CRM was not connected', detail });
      const input = parseCallback(request.query as Record<string, unknown>);
      if (input.kind === 'invalid') return refused(`The answer from the CRM is not usable: ${input.reason}.`);
      const pending = input.state ? await states.take(input.state) : undefined;
      if (!pending) return refused('This sign-in link has expired or was already used.');
      const cookie = request.cookies[OAUTH_BINDING_COOKIE];
      if (!cookie || !secretsEqual(sha256Hex(cookie), pending.bindingHash)) {
        request.log.warn({ accountId: pending.accountId, provider: pending.provider }, 'dashboard: OAuth callback from another browser refused');
        return refused('The connection was started in another browser or session. Start it again here.');
      }
      const label = LABEL[pending.provider];
      if (input.kind === 'error') {
        request.log.info({ accountId: pending.accountId, provider: pending.provider, error: input.error }, 'dashboard: OAuth refused by the CRM');
        return refused(`${label} answered: ${input.error}${input.description ? ` (${input.description})` : ''}.`);
      }
      const owner = cp.ownerByEmail(pending.email);
      const account = cp.accountById(pending.accountId);
      // As the session guard: an owner removed or moved, or whose password was reset after the
      // session that started this signed in, no longer has that session.
      const resetSince = owner?.passwordChangedAt !== undefined && pending.sessionCreatedAtMs < Date.parse(owner.passwordChangedAt);
      if (!owner || owner.id !== pending.ownerId || owner.accountId !== pending.accountId || !account || resetSince) {
        return refused('The dashboard session that started this connection is no longer valid. Sign in again.');
      }
      if (pending.sessionRef !== undefined && !(await deps.sessions.isLive(pending.sessionRef))) {
        request.log.info({ accountId: pending.accountId, provider: pending.provider }, 'dashboard: OAuth callback after its session ended refused');
        return refused('The dashboard session that started this connection has ended (signed out or expired). Sign in and connect again.');
      }
      const oauthApp = deps.apps.apps[pending.provider];
      if (!oauthApp) return refused(`Connecting ${label} is no longer set up on this deployment.`);
      let tokens: TokenSet;
      try {
        tokens = await exchangeCode(deps.send, oauthApp, {
          code: input.code,
          codeVerifier: pending.codeVerifier,
          redirectUri: deps.apps.redirectUrl,
          nowMs: deps.now(),
        });
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        request.log.warn(
          { accountId: pending.accountId, provider: pending.provider, code: err.code, reason: err.message },
          'dashboard: OAuth code exchange failed',
        );
        return err.code === OAUTH_REFUSED
          ? refused(`${label} did not accept the authorization (${err.message}).`)
          : refused(`${label} could not be reached to finish the connection; try again in a moment.`, 502);
      }
      if (!tokens.refreshToken) return refused(`${label} issued no refresh token: the app must ask for offline access (refresh_token scope).`);
      const auth = {
        v: 1 as const,
        kind: 'oauth' as const,
        clientId: oauthApp.clientId,
        connectionId: randomBytes(8).toString('hex'),
        expiresAt: new Date(tokens.expiresAtMs).toISOString(),
        ...(tokens.scope ? { scope: tokens.scope } : {}),
        connectedBy: `owner:${pending.email}`,
      };
      let credential: CrmCredential;
      if (pending.provider === 'salesforce') {
        const check = tokens.instanceUrl ? deps.outboundPolicy.checkUrl(tokens.instanceUrl) : { ok: false as const, reason: 'none was given' };
        if (!tokens.instanceUrl || !check.ok) return refused(`Salesforce named an instance URL that cannot be used (${check.ok ? '' : check.reason}).`);
        credential = { type: 'salesforce', instanceUrl: tokens.instanceUrl, accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, auth };
      } else {
        const baseUrl = deps.apps.hubspotApiUrl === 'https://api.hubapi.com' ? {} : { baseUrl: deps.apps.hubspotApiUrl };
        credential = { type: 'hubspot', accessToken: tokens.accessToken, refreshToken: tokens.refreshToken, auth, ...baseUrl };
      }
      const previous = cp.crmCredential(pending.accountId, pending.name);
      let stored: StoredCrmCredential;
      try {
        stored = await cp.putCrmCredential(pending.accountId, pending.name, credential);
      } catch (err) {
        if (!(err instanceof AppError)) throw err;
        request.log.error(
          { accountId: pending.accountId, provider: pending.provider, code: err.code, reason: err.message },
          'dashboard: OAuth credential not stored',
        );
        return refused(`The connection could not be stored (${err.code}); try again in a moment.`, 503);
      }
      // The callback comes without the Strict session cookie: the audit's actor is the owner the state was issued to.
      request.dashboard = {
        session: { accountId: pending.accountId, ownerId: pending.ownerId, email: pending.email, csrfToken: '', createdAtMs: pending.sessionCreatedAtMs },
        token: '',
        account,
        setupSecondFactor: false,
      };
      if (previous) await queueRevocation(request, previous);
      request.log.info({ accountId: pending.accountId, provider: pending.provider, credentialName: pending.name }, 'dashboard: CRM connected with OAuth');
      await deps.auditor.record(request, {
        action: 'crm_credential.connect',
        accountId: pending.accountId,
        target: pending.name,
        before: previous ? connectionView(previous) : null,
        after: connectionView(stored),
      });
      return page(200, {
        ok: true,
        title: `${label} is connected`,
        detail: `Stored as the credential “${pending.name}”. Point your CRM mapping at it (crm.credentialsRef) to sync.`,
      });
    }

    app.get('/crm/oauth/connections', { ...deps.limits.api, schema: { hide: true } }, async (request) => {
      const { account } = dashboardOf(request);
      const connections = [];
      for (const stored of cp.listCrmCredentials(account.id)) {
        const auth = credentialAuth(stored.credential as Record<string, unknown>);
        if (auth.kind !== 'oauth' && auth.kind !== 'jwt-bearer') continue;
        const connectionId = auth.kind === 'oauth' ? auth.connectionId : '';
        const state = decodeOAuthTokenState(await deps.redis.hget(oauthTokenKey(deps.keyPrefix, account.id, stored.name), 'json'));
        connections.push({ ...connectionView(stored), health: connectionHealth(state, connectionId || (state?.connectionId ?? '')) });
      }
      const providers = Object.fromEntries(OAUTH_PROVIDERS.map((p) => [p, deps.apps.apps[p] !== undefined && deps.apps.redirectUrl !== '']));
      return { providers, connections };
    });

    app.delete<{ Params: { name: string } }>(
      '/crm/oauth/connections/:name',
      { ...deps.limits.api, schema: { hide: true, params: NameParams } },
      async (request) => {
        const { account } = dashboardOf(request);
        const { name } = request.params;
        const stored = cp.crmCredential(account.id, name);
        if (!stored || credentialAuth(stored.credential as Record<string, unknown>).kind !== 'oauth') {
          throw new ProblemError('notFound', `There is no OAuth connection named ${name}.`);
        }
        try {
          await cp.deleteCrmCredential(account.id, name);
        } catch (err) {
          if (err instanceof AppError && err.code === 'crm_credential_in_use') throw new ProblemError('conflict', `${err.message}.`, { cause: err });
          if (err instanceof AppError && err.code === 'crm_credential_not_found') throw new ProblemError('notFound', `${err.message}.`, { cause: err });
          throw err;
        }
        const revocation = await queueRevocation(request, stored);
        request.log.info({ accountId: account.id, credentialName: name, revocation }, 'dashboard: OAuth connection removed');
        await deps.auditor.record(request, {
          action: 'crm_credential.disconnect',
          accountId: account.id,
          target: name,
          before: connectionView(stored),
          after: null,
        });
        return { name, disconnected: true, revocation };
      },
    );
  };
}

import { setTimeout as sleep } from 'node:timers/promises';
import {
  connectionIdOf,
  type CredentialAuth,
  credentialAuth,
  type CredentialKeyring,
  CrmError,
  type CrmCredential,
  type FormSender,
  jwtBearerGrant,
  type JwtBearerAuth,
  OAUTH_REFUSED,
  OAUTH_UNAVAILABLE,
  type OAuthApps,
  type OAuthAuth,
  oauthErrorOf,
  oauthTokenAad,
  oauthTokenKey,
  type OAuthTokenState,
  refreshGrant,
  type StoredCrmCredential,
  type TokenSet,
} from '@ingest/domain';
import { AppError, type Logger, type Redis, tryLease } from '@ingest/platform';
import type { BearerSource } from '../adapters/http.client.js';
import { AccountBlocked } from '../retry/crm-call.retry.js';
import { salesforceJwtAssertion } from './jwt-assertion.js';
import type { OAuthMetrics } from './oauth.metrics.js';
import type { TokenStateStore } from './token.store.js';

/**
 * Access tokens of OAuth and JWT bearer credentials (docs/crm-sync.md, "OAuth connections").
 *
 * - Before expiry (CRM_OAUTH_REFRESH_BEFORE_SECONDS) and after a 401, the token is refreshed.
 * - One refresh in flight per credential across replicas: a replica takes the credential's Redis
 *   lease, reads the stored token set again (another replica may have refreshed meanwhile: then
 *   that token is used, nothing is refreshed), calls the token endpoint, and writes the new set
 *   compare-and-set before it lets go. Replicas without the lease poll the stored set until a
 *   newer token appears. With rotating refresh tokens two refreshes with one refresh token would
 *   invalidate each other; this is why the lease outlives the token call's timeout.
 * - A refresh the server refuses with `invalid_grant` (revoked, expired) marks the connection
 *   broken in the stored set: every replica then blocks the account (`credential_broken`, its
 *   events are parked and held, not dead-lettered) until the owner connects again, which is a
 *   new connection id and starts clean. Other refusals (a wrong client secret) block the account
 *   with backoff without marking it, since fixing the configuration fixes them.
 */
export interface TokenManagerDeps {
  store: TokenStateStore;
  redis: Redis;
  keyPrefix?: string;
  keyring: CredentialKeyring;
  apps: OAuthApps;
  send: FormSender;
  metrics: OAuthMetrics;
  logger: Logger;
  /** The lease on one credential's refresh; longer than a token call can take. */
  leaseMs: number;
  /** How long a replica waits for another's refresh before failing the call as transient. */
  waitMs: number;
  pollMs?: number;
  /** How long an account with a refused (not broken) credential waits before the next try. */
  refusedRetryMs?: number;
  now?: () => number;
}

export interface TokenManager {
  /** The bearer source of an OAuth or JWT bearer credential; undefined for a bare token. Throws AppError `unknown_version` for an `auth` of a newer release. */
  bearerFor(stored: StoredCrmCredential, credential: CrmCredential): BearerSource | undefined;
  /** Credentials this replica found broken (the metric's gauge). */
  brokenCount(): number;
}

interface Tokens {
  generation: number;
  accessToken: string;
  refreshToken?: string;
  expiresAtMs: number;
}

export function createTokenManager(deps: TokenManagerDeps): TokenManager {
  const now = deps.now ?? Date.now;
  const pollMs = deps.pollMs ?? 100;
  const broken = new Set<string>();
  const log = deps.logger.child({ component: 'crm-oauth' });

  function createSource(stored: StoredCrmCredential, credential: Exclude<CrmCredential, { type: 'webhook' }>, auth: OAuthAuth | JwtBearerAuth): BearerSource {
    const { accountId, name } = stored;
    const crm = credential.type;
    const id = `${accountId}/${name}`;
    const connectionId = connectionIdOf(stored, auth);
    const aad = oauthTokenAad(accountId, name, connectionId);
    const lockKey = `${oauthTokenKey(deps.keyPrefix, accountId, name)}:lease`;
    const sealer = deps.keyring.sealer(stored.sealed?.kid);
    const logFields = { accountId, credentialName: name, crm, connectionId };
    let cache: Tokens | undefined;
    let inFlight: Promise<string> | undefined;

    const initial = (): Tokens => ({
      generation: 0,
      accessToken: credential.accessToken,
      ...(credential.refreshToken ? { refreshToken: credential.refreshToken } : {}),
      expiresAtMs: auth.kind === 'oauth' && auth.expiresAt ? Date.parse(auth.expiresAt) || 0 : 0,
    });
    const fresh = (t: Tokens) => t.accessToken !== '' && t.expiresAtMs - deps.apps.refreshBeforeMs > now();
    // No wait of its own: the park holds the account at once and looks again every CRM_PARK_POLL_MS.
    const brokenBlock = (reason: string) => new AccountBlocked('credential_broken', 0, `credential ${name} (${crm}) needs to be connected again: ${reason}`);

    async function load(): Promise<{ tokens: Tokens; stamp: string }> {
      const { state, stamp } = await deps.store.read(accountId, name);
      if (state?.connectionId === connectionId && state.broken) {
        broken.add(id);
        throw brokenBlock(state.broken.reason);
      }
      // A new connection replaces a broken one.
      broken.delete(id);
      if (!state || state.connectionId !== connectionId) return { tokens: initial(), stamp };
      if (!state.sealed) return { tokens: initial(), stamp };
      try {
        const secrets = deps.keyring.open(state.sealed, aad);
        if (!secrets.accessToken) return { tokens: initial(), stamp };
        return {
          tokens: {
            generation: state.generation,
            accessToken: secrets.accessToken,
            ...(secrets.refreshToken ? { refreshToken: secrets.refreshToken } : {}),
            expiresAtMs: state.expiresAtMs,
          },
          stamp,
        };
      } catch (err) {
        // Sealed with a key no longer configured: start again from the record's tokens.
        log.warn({ ...logFields, code: err instanceof AppError ? err.code : 'error' }, 'stored OAuth tokens unreadable; using the credential record');
        return { tokens: initial(), stamp };
      }
    }

    async function grant(tokens: Tokens): Promise<TokenSet> {
      if (auth.kind === 'jwt-bearer') {
        if (crm !== 'salesforce' || !credential.privateKey) throw brokenBlock('the JWT bearer credential has no private key');
        const loginUrl = (auth.loginUrl ?? deps.apps.salesforceLoginUrl).replace(/\/+$/, '');
        const assertion = salesforceJwtAssertion({
          clientId: auth.clientId,
          username: auth.username,
          audience: loginUrl,
          privateKeyPem: credential.privateKey,
          nowMs: now(),
        });
        return jwtBearerGrant(deps.send, {
          tokenUrl: `${loginUrl}/services/oauth2/token`,
          assertion,
          defaultTtlMs: deps.apps.apps.salesforce?.defaultTokenTtlMs ?? 2 * 3600_000,
          nowMs: now(),
        });
      }
      const app = deps.apps.apps[crm];
      if (!app || app.clientId !== auth.clientId) {
        throw new AccountBlocked(
          'failing',
          deps.refusedRetryMs ?? 60_000,
          `the ${crm} OAuth app ${auth.clientId} is not configured on crm-sink (CRM_OAUTH_${crm.toUpperCase()}_CLIENT_ID)`,
        );
      }
      if (!tokens.refreshToken) throw brokenBlock('no refresh token was issued');
      return refreshGrant(deps.send, app, { refreshToken: tokens.refreshToken, nowMs: now() });
    }

    /** Marks the connection broken in the stored set (every replica then blocks the account) and blocks. */
    async function breakConnection(reason: string, tokens: Tokens, stamp: string, trigger: string): Promise<never> {
      const state: OAuthTokenState = {
        v: 1,
        connectionId,
        generation: tokens.generation,
        expiresAtMs: 0,
        refreshedAtMs: now(),
        broken: { reason: reason.slice(0, 300), atMs: now() },
      };
      await deps.store.replace(accountId, name, stamp, state);
      broken.add(id);
      deps.metrics.refreshes.inc({ crm, trigger, outcome: 'broken' });
      log.error({ ...logFields, reason }, 'OAuth credential broken: its account is parked until the owner connects again');
      throw brokenBlock(reason);
    }

    /** The grant failed: broken for good, refused (configuration), or the server is unavailable (retried). */
    async function failed(err: unknown, tokens: Tokens, stamp: string, trigger: string): Promise<never> {
      if (!(err instanceof AppError)) throw err;
      if (err.code === OAUTH_UNAVAILABLE) {
        deps.metrics.refreshes.inc({ crm, trigger, outcome: 'failed' });
        throw new CrmError('transient', err.message);
      }
      if (err.code !== OAUTH_REFUSED) throw err;
      if (oauthErrorOf(err) === 'invalid_grant') return await breakConnection(err.message, tokens, stamp, trigger);
      deps.metrics.refreshes.inc({ crm, trigger, outcome: 'refused' });
      log.warn({ ...logFields, reason: err.message }, 'OAuth token refresh refused; the account waits');
      throw new AccountBlocked('failing', deps.refusedRetryMs ?? 60_000, `token refresh refused: ${err.message}`);
    }

    function use(tokens: Tokens, trigger: string, outcome: string): string {
      cache = tokens;
      broken.delete(id);
      deps.metrics.refreshes.inc({ crm, trigger, outcome });
      return tokens.accessToken;
    }

    async function singleFlight(trigger: 'expiry' | 'unauthorized', stale: string): Promise<string> {
      const deadline = now() + deps.waitMs;
      for (;;) {
        const release = await tryLease(deps.redis, lockKey, deps.leaseMs);
        if (release) {
          try {
            const { tokens, stamp } = await load();
            if (tokens.accessToken !== stale && fresh(tokens)) return use(tokens, trigger, 'reused');
            let next: TokenSet;
            try {
              next = await grant(tokens);
            } catch (err) {
              return await failed(err, tokens, stamp, trigger);
            }
            // The instance URL is part of the sealed record (its AAD binds it), which only the
            // console writes: a token for another instance is not followed but shown to the owner,
            // whose next consent stores the new URL. Orgs on My Domain keep their URL when moved.
            const moved = crm === 'salesforce' ? instanceMove(credential.instanceUrl, next.instanceUrl) : undefined;
            if (moved) return await breakConnection(moved, tokens, stamp, trigger);
            const refreshToken = next.refreshToken ?? tokens.refreshToken;
            const sealed = sealer.seal({ accessToken: next.accessToken, ...(refreshToken ? { refreshToken } : {}) }, aad);
            const generation = tokens.generation + 1;
            const state: OAuthTokenState = { v: 1, connectionId, generation, sealed, expiresAtMs: next.expiresAtMs, refreshedAtMs: now() };
            if (await deps.store.replace(accountId, name, stamp, state)) {
              log.info(
                { ...logFields, trigger, generation, rotated: next.refreshToken !== undefined && next.refreshToken !== tokens.refreshToken },
                'OAuth token refreshed',
              );
              return use(
                { generation, accessToken: next.accessToken, ...(refreshToken ? { refreshToken } : {}), expiresAtMs: next.expiresAtMs },
                trigger,
                'refreshed',
              );
            }
            // Another writer came first (our lease had expired): its tokens win; read them next round.
          } finally {
            await release().catch(() => undefined);
          }
        } else {
          const { tokens } = await load();
          if (tokens.accessToken !== stale && fresh(tokens)) return use(tokens, trigger, 'reused');
        }
        if (now() >= deadline) throw new CrmError('transient', `the OAuth token of credential ${name} was not refreshed within ${deps.waitMs} ms`);
        await sleep(pollMs);
      }
    }

    function refresh(trigger: 'expiry' | 'unauthorized', stale: string): Promise<string> {
      // One refresh per credential on this replica; the lease makes it one across replicas.
      inFlight ??= singleFlight(trigger, stale).finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    }

    return {
      async token() {
        if (cache && fresh(cache)) return cache.accessToken;
        if (!cache || cache.expiresAtMs <= now()) {
          const { tokens } = await load();
          cache = tokens;
          if (fresh(tokens)) return tokens.accessToken;
        }
        const current = cache;
        try {
          return await refresh('expiry', current.accessToken);
        } catch (err) {
          // Refreshing early failed for a passing reason: the current token still works for now.
          if (err instanceof CrmError && err.kind === 'transient' && current.accessToken !== '' && current.expiresAtMs > now()) return current.accessToken;
          throw err;
        }
      },
      refreshAfterUnauthorized: (rejected) => refresh('unauthorized', rejected),
    };
  }

  return {
    bearerFor(stored, credential) {
      if (credential.type === 'webhook') return undefined;
      const auth: CredentialAuth = credentialAuth(stored.credential as Record<string, unknown>);
      if (auth.kind === 'token') return undefined;
      if (auth.kind === 'unknown') throw new AppError('unknown_version', `credential ${stored.name}: ${auth.reason}`);
      return createSource(stored, credential, auth);
    },
    brokenCount: () => broken.size,
  };
}

/** Why a token for `issued` cannot be used with a credential for `stored`, or undefined when it can (same origin, or none named). */
export function instanceMove(stored: string | undefined, issued: string | undefined): string | undefined {
  if (!issued || !stored) return undefined;
  const origin = (url: string) => {
    try {
      return new URL(url).origin;
    } catch {
      return url.slice(0, 200);
    }
  };
  const [from, to] = [origin(stored), origin(issued)];
  return from === to ? undefined : `Salesforce moved this org from ${from} to ${to}: connect again to use the new instance`;
}

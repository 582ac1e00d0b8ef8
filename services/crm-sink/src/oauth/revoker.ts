import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CredentialKeyring,
  decodeOAuthRevokeRequest,
  decodeOAuthTokenState,
  type FormSender,
  OAUTH_REFUSED,
  type OAuthApps,
  oauthRevokeQueueKey,
  oauthTokenAad,
  openCredentialSecrets,
  oauthTokenKey,
  revokeRefreshToken,
} from '@ingest/domain';
import { AppError, type Component, type Logger, type Redis } from '@ingest/platform';
import type { OAuthMetrics } from './oauth.metrics.js';

const MAX_ATTEMPTS = 5;
const BATCH = 10;

/**
 * Revokes the grants of disconnected OAuth credentials. The console cannot: it seals for
 * crm-sink and opens nothing. On disconnect it writes the credential's tombstone and queues the
 * record's sealed secrets in Redis (`crm:oauth:revoke`); one replica pops each request (LPOP is
 * atomic), opens it, prefers the refresh token the sink itself stored for that connection (it
 * may have rotated), revokes it at the CRM and deletes the stored tokens. A revocation the CRM
 * cannot take now is queued again, up to 5 attempts; a refused one (already revoked) is done.
 */
export function createOAuthRevoker(deps: {
  redis: Redis;
  keyPrefix?: string;
  keyring: CredentialKeyring;
  apps: OAuthApps;
  send: FormSender;
  metrics: OAuthMetrics;
  logger: Logger;
  pollMs: number;
}): Component {
  const log = deps.logger.child({ component: 'crm-oauth-revoker' });
  const queue = oauthRevokeQueueKey(deps.keyPrefix);
  const abort = new AbortController();
  let loop: Promise<void> | undefined;

  async function revokeOne(raw: string): Promise<void> {
    const request = decodeOAuthRevokeRequest(raw);
    if (!request) {
      deps.metrics.revocations.inc({ outcome: 'dropped' });
      log.warn('an unreadable revocation request was dropped');
      return;
    }
    const { accountId, name, provider, connectionId } = request;
    const fields = { accountId, credentialName: name, crm: provider, connectionId };
    const app = deps.apps.apps[provider];
    let refreshToken: string | undefined;
    const tokenKey = oauthTokenKey(deps.keyPrefix, accountId, name);
    const state = decodeOAuthTokenState(await deps.redis.hget(tokenKey, 'json'));
    try {
      if (state?.connectionId === connectionId && state.sealed)
        refreshToken = deps.keyring.open(state.sealed, oauthTokenAad(accountId, name, connectionId)).refreshToken;
      refreshToken ??= openCredentialSecrets(deps.keyring, {
        accountId,
        name,
        credential: request.credential ?? { type: provider },
        sealed: request.sealed,
      }).refreshToken;
    } catch {
      refreshToken = undefined;
    }
    if (!app || !refreshToken) {
      deps.metrics.revocations.inc({ outcome: 'dropped' });
      log.warn(fields, app ? 'nothing to revoke: no readable refresh token' : 'cannot revoke: the OAuth app is not configured');
    } else {
      try {
        await revokeRefreshToken(deps.send, app, { refreshToken, hubspotApiUrl: deps.apps.hubspotApiUrl, salesforceLoginUrl: deps.apps.salesforceLoginUrl });
        deps.metrics.revocations.inc({ outcome: 'revoked' });
        log.info(fields, 'OAuth grant revoked after disconnect');
      } catch (err) {
        if (err instanceof AppError && err.code === OAUTH_REFUSED) {
          deps.metrics.revocations.inc({ outcome: 'gone' });
          log.info({ ...fields, reason: err.message }, 'OAuth grant already gone at the CRM');
        } else {
          const attempts = (request.attempts ?? 0) + 1;
          deps.metrics.revocations.inc({ outcome: attempts >= MAX_ATTEMPTS ? 'dropped' : 'failed' });
          log.warn({ ...fields, attempts, reason: err instanceof Error ? err.message : String(err) }, 'OAuth revocation failed');
          if (attempts < MAX_ATTEMPTS) await deps.redis.rpush(queue, JSON.stringify({ ...request, attempts }));
          return;
        }
      }
    }
    if (state?.connectionId === connectionId) await deps.redis.del(tokenKey);
  }

  async function run(): Promise<void> {
    while (!abort.signal.aborted) {
      try {
        const batch = (await deps.redis.lpop(queue, BATCH)) ?? [];
        for (const raw of batch) await revokeOne(raw);
        if (batch.length === BATCH) continue;
      } catch (err) {
        log.error({ err }, 'OAuth revocation queue unavailable');
      }
      try {
        await sleep(deps.pollMs, undefined, { signal: abort.signal });
      } catch {
        return;
      }
    }
  }

  return {
    name: 'crm-oauth-revoker',
    async start() {
      loop = run();
    },
    async stop() {
      abort.abort();
      await loop;
    },
    // Revocation is best effort and Redis trouble shows in the sink's own health: never unready for it.
    healthy: () => true,
  };
}

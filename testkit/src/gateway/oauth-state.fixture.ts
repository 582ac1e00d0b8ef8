import { oauthTokenKey, type OAuthTokenState } from '@ingest/domain';
import type { Redis } from '@ingest/platform';

/**
 * What crm-sink's token store writes when a refresh is refused with invalid_grant
 * (oauth-token-state.ts; the stamp as its stampOf makes it): the connection is broken, and the
 * dashboard shows it so.
 */
export async function markOAuthConnectionBroken(
  redis: Redis,
  target: { keyPrefix: string; accountId: string; name: string; connectionId: string; reason: string },
): Promise<void> {
  const broken: OAuthTokenState = {
    v: 1,
    connectionId: target.connectionId,
    generation: 0,
    expiresAtMs: 0,
    refreshedAtMs: 1,
    broken: { reason: target.reason, atMs: 1 },
  };
  await redis.hset(oauthTokenKey(target.keyPrefix, target.accountId, target.name), 'stamp', `${target.connectionId}:0:broken`, 'json', JSON.stringify(broken));
}

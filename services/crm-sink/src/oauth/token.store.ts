import { AppError, type Redis, redisScript } from '@ingest/platform';
import { decodeOAuthTokenState, oauthTokenKey, type OAuthTokenState } from '@ingest/domain';

/**
 * Where crm-sink keeps the tokens it refreshed (format: @ingest/domain oauth-token-state.ts):
 * a Redis hash per credential with `stamp` (`<connectionId>:<generation>`) and `json`. Writes
 * are compare-and-set on the stamp, so of two replicas that both refreshed (a lease that
 * expired mid-call) only the first result is kept, and a broken mark cannot be overwritten by
 * a late success of the same generation.
 */
export interface TokenStateStore {
  read(accountId: string, name: string): Promise<{ state: OAuthTokenState | undefined; stamp: string }>;
  /** Writes `next` if the stamp is still `expected`; false when another writer came first. */
  replace(accountId: string, name: string, expected: string, next: OAuthTokenState): Promise<boolean>;
}

export const stampOf = (state: Pick<OAuthTokenState, 'connectionId' | 'generation' | 'broken'>) =>
  `${state.connectionId}:${state.generation}${state.broken ? ':broken' : ''}`;

const REPLACE = redisScript(
  `
local cur = redis.call('HGET', KEYS[1], 'stamp')
if (cur or '') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'stamp', ARGV[2], 'json', ARGV[3])
return 1
`,
  'crm_token_replace',
);

function unavailable(what: string, err: unknown): AppError {
  return new AppError('crm_token_store_unavailable', `${what}: ${err instanceof Error ? err.message : String(err)}`, { retryable: true });
}

export function createTokenStateStore(options: { redis: Redis; keyPrefix?: string }): TokenStateStore {
  const key = (accountId: string, name: string) => oauthTokenKey(options.keyPrefix, accountId, name);
  return {
    async read(accountId, name) {
      try {
        const [stamp, json] = await options.redis.hmget(key(accountId, name), 'stamp', 'json');
        return { state: decodeOAuthTokenState(json ?? null), stamp: stamp ?? '' };
      } catch (err) {
        throw unavailable('reading OAuth tokens failed', err);
      }
    },
    async replace(accountId, name, expected, next) {
      try {
        return Number(await REPLACE(options.redis, [key(accountId, name)], [expected, stampOf(next), JSON.stringify(next)])) === 1;
      } catch (err) {
        throw unavailable('storing OAuth tokens failed', err);
      }
    },
  };
}

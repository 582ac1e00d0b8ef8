import { type OAuthProvider, sha256Hex } from '@ingest/domain';
import { type Redis, redisScript, withRedis } from '@ingest/platform';

/**
 * Pending OAuth authorizations of the dashboard, in Redis: one per "Connect" click, keyed by
 * the SHA-256 of its `state`, living 10 minutes, taken (read and deleted at once) by the
 * callback, so a state works once. The record binds the attempt to the owner's session (account,
 * owner, email) and to the browser (the hash of a nonce in a SameSite=Lax cookie: the session
 * cookie is SameSite=Strict and does not come along on the CRM's redirect back). The PKCE code
 * verifier never leaves the server.
 */
export interface PendingAuthorization {
  v: 1;
  provider: OAuthProvider;
  /** The credential name it will be stored as. */
  name: string;
  accountId: string;
  ownerId: string;
  email: string;
  sessionCreatedAtMs: number;
  /** sessionRef of the session that started it (absent in states written before it existed): a sign-out in between refuses the callback. */
  sessionRef?: string;
  codeVerifier: string;
  bindingHash: string;
  createdAtMs: number;
}

export const STATE_TTL_MS = 10 * 60_000;
/** Pending authorizations per account at once: each click makes one, they expire after STATE_TTL_MS. */
export const MAX_PENDING_PER_ACCOUNT = 20;

export interface OAuthStateStore {
  /** False when the account already has MAX_PENDING_PER_ACCOUNT pending. */
  put(state: string, pending: PendingAuthorization): Promise<boolean>;
  take(state: string): Promise<PendingAuthorization | undefined>;
}

// KEYS: state key, account counter. ARGV: json, ttl, max.
const PUT = redisScript(
  `
local n = redis.call('INCR', KEYS[2])
if n == 1 or redis.call('PTTL', KEYS[2]) < 0 then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
if n > tonumber(ARGV[3]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`,
  'oauth_state_put',
);
const TAKE = redisScript(
  `
local v = redis.call('GET', KEYS[1])
if v then redis.call('DEL', KEYS[1]) end
return v
`,
  'oauth_state_take',
);

export function createOAuthStateStore(options: { redis: Redis; keyPrefix?: string }): OAuthStateStore {
  const prefix = `${options.keyPrefix ?? ''}dashboard:oauth`;
  const stateKey = (state: string) => `${prefix}:state:${sha256Hex(state)}`;
  return {
    put: (state, pending) =>
      withRedis(
        'oauth state',
        (async () =>
          Number(
            await PUT(
              options.redis,
              [stateKey(state), `${prefix}:pending:${encodeURIComponent(pending.accountId)}`],
              [JSON.stringify(pending), STATE_TTL_MS, MAX_PENDING_PER_ACCOUNT],
            ),
          ) === 1)(),
      ),
    take: (state) =>
      withRedis(
        'oauth state',
        (async () => {
          const raw = (await TAKE(options.redis, [stateKey(state)], [])) as string | null;
          if (!raw) return undefined;
          const parsed = JSON.parse(raw) as PendingAuthorization;
          return parsed.v === 1 ? parsed : undefined;
        })(),
      ),
  };
}

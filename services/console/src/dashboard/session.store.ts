import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { type Redis, withRedis } from '@ingest/platform';

/**
 * Dashboard sessions in Redis, so any gateway replica serves any signed-in owner. Without Redis
 * no session can be checked: every call fails with `redis_unavailable` (503), never a 500. The cookie
 * holds a random 32-byte id; Redis holds only its SHA-256, so a leaked Redis dump signs no one
 * in. A session ends after `idleSeconds` without use (the key's TTL, renewed on use) and
 * `maxSeconds` after sign-in whatever happens.
 */
export interface Session {
  accountId: string;
  ownerId: string;
  email: string;
  csrfToken: string;
  createdAtMs: number;
}

export interface SessionStore {
  create(owner: { accountId: string; ownerId: string; email: string }): Promise<{ token: string; session: Session }>;
  /** The live session of a cookie value, its idle timer renewed; undefined when unknown or expired. */
  get(token: string): Promise<Session | undefined>;
  destroy(token: string): Promise<void>;
  /**
   * Whether the session of this reference (sessionRef of its cookie value) is still live, without
   * renewing its idle timer: for flows that leave the dashboard and come back without the cookie
   * (the OAuth callback, which SameSite=Strict keeps the session cookie away from).
   */
  isLive(ref: string): Promise<boolean>;
}

/** A session's reference: the SHA-256 of its cookie value, which names its Redis key and signs no one in. */
export function sessionRef(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface SessionStoreDeps {
  redis: Redis;
  keyPrefix?: string;
  idleSeconds: number;
  maxSeconds: number;
  now?: () => number;
}

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export function createSessionStore(deps: SessionStoreDeps): SessionStore {
  const now = deps.now ?? Date.now;
  const keyOfRef = (ref: string) => `${deps.keyPrefix ?? ''}dashboard:session:${ref}`;
  const keyOf = (token: string) => keyOfRef(sessionRef(token));
  const ttlMs = (createdAtMs: number) => Math.min(deps.idleSeconds * 1000, createdAtMs + deps.maxSeconds * 1000 - now());

  const store: SessionStore = {
    async create(owner) {
      const token = randomBytes(32).toString('base64url');
      const session: Session = { ...owner, csrfToken: randomBytes(32).toString('base64url'), createdAtMs: now() };
      await deps.redis.set(keyOf(token), JSON.stringify(session), 'PX', ttlMs(session.createdAtMs));
      return { token, session };
    },
    async get(token) {
      if (!TOKEN_PATTERN.test(token)) return undefined;
      const key = keyOf(token);
      const raw = await deps.redis.get(key);
      if (raw === null) return undefined;
      const session = JSON.parse(raw) as Session;
      const remaining = ttlMs(session.createdAtMs);
      if (remaining <= 0) {
        await deps.redis.del(key);
        return undefined;
      }
      await deps.redis.pexpire(key, remaining);
      return session;
    },
    async destroy(token) {
      if (TOKEN_PATTERN.test(token)) await deps.redis.del(keyOf(token));
    },
    async isLive(ref) {
      if (!/^[0-9a-f]{64}$/.test(ref)) return false;
      const raw = await deps.redis.get(keyOfRef(ref));
      return raw !== null && ttlMs((JSON.parse(raw) as Session).createdAtMs) > 0;
    },
  };
  return {
    create: (owner) => withRedis('dashboard session', store.create(owner)),
    get: (token) => withRedis('dashboard session', store.get(token)),
    destroy: (token) => withRedis('dashboard session', store.destroy(token)),
    isLive: (ref) => withRedis('dashboard session', store.isLive(ref)),
  };
}

/** Constant-time check of the CSRF header against the session's token. */
export function csrfTokenMatches(session: Session, header: string | string[] | undefined): boolean {
  if (typeof header !== 'string' || header.length === 0) return false;
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(header), digest(session.csrfToken));
}

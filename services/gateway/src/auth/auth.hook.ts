import { type Account, type ControlPlaneReader, hashApiKey, isWellFormedApiKey } from '@ingest/domain';
import type { FastifyRequest } from 'fastify';
import { ProblemError } from '../http/problem.js';

export interface AuthContext {
  account: Account;
  keyId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthContext;
  }
}

/**
 * Missing, malformed, unknown and revoked keys get the same answer, so the response never
 * tells an attacker which keys exist or existed.
 */
const UNAUTHORIZED_DETAIL = 'Send a valid, unrevoked API key as `Authorization: Bearer svc_live_...`.';

export function authenticate(controlPlane: ControlPlaneReader, authorization: string | undefined): AuthContext {
  const match = /^Bearer ([^\s]+)$/i.exec(authorization?.trim() ?? '');
  const candidate = match?.[1];
  if (candidate && isWellFormedApiKey(candidate)) {
    const key = controlPlane.apiKeyByHash(hashApiKey(candidate));
    const account = key && key.revokedAt === null ? controlPlane.accountById(key.accountId) : undefined;
    if (key && account) return { account, keyId: key.id };
  }
  throw new ProblemError('unauthorized', UNAUTHORIZED_DETAIL, { headers: { 'www-authenticate': 'Bearer realm="api"' } });
}

/** `onKeyUsed` must be cheap and must not throw: it runs on every authenticated request. */
export function createAuthHook(controlPlane: ControlPlaneReader, onKeyUsed: (keyId: string) => void = () => {}) {
  return async (request: FastifyRequest): Promise<void> => {
    request.auth = authenticate(controlPlane, request.headers.authorization);
    onKeyUsed(request.auth.keyId);
  };
}

/** For handlers behind the hook: the authenticated context, which the hook guarantees. */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new ProblemError('unauthorized', UNAUTHORIZED_DETAIL);
  return request.auth;
}

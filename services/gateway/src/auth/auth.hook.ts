import {
  type Account,
  type ApiKeyScope,
  type ApiKeyType,
  type ControlPlaneReader,
  effectiveScopes,
  hashApiKey,
  isSuspended,
  isWellFormedApiKey,
  keyType,
} from '@ingest/domain';
import type { FastifyRequest } from 'fastify';
import { ProblemError } from '@ingest/http';
import { type KeyCarrier, presentedKey } from './presented-key.js';

export interface AuthContext {
  account: Account;
  keyId: string;
  keyType: ApiKeyType;
  scopes: readonly ApiKeyScope[];
}

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthContext;
  }
  interface FastifyContextConfig {
    /** The scope an API key needs for this /v1 route; every /v1 route must declare one (app.ts checks). */
    apiScope?: ApiKeyScope;
    /** Publishable keys may call this route (POST /v1/events only: never a job, never a read); default no. */
    publishableKeys?: boolean;
    /**
     * Where the route takes its key: `bearer` (default), `basic` (also HTTP Basic with the key as
     * user name, as Segment's server SDKs send it) or `body` (a `writeKey` member of the JSON
     * body, as Segment's browser SDK sends it: authenticated once the body is parsed).
     */
    keyIn?: KeyCarrier;
  }
}

/**
 * Missing, malformed, unknown and revoked keys get the same answer, so the response never
 * tells an attacker which keys exist or existed.
 */
const UNAUTHORIZED_DETAIL = 'Send a valid, unrevoked API key as `Authorization: Bearer svc_live_...`.';

export function authenticate(controlPlane: ControlPlaneReader, candidate: string | undefined): AuthContext {
  if (candidate && isWellFormedApiKey(candidate)) {
    const key = controlPlane.apiKeyByHash(hashApiKey(candidate));
    const account = key && key.revokedAt === null ? controlPlane.accountById(key.accountId) : undefined;
    if (key && account) return { account, keyId: key.id, keyType: keyType(key), scopes: effectiveScopes(key) };
  }
  throw new ProblemError('unauthorized', UNAUTHORIZED_DETAIL, { headers: { 'www-authenticate': 'Bearer realm="api"' } });
}

/**
 * What a valid key may do on this route, after it was authenticated (so a 401 stays a 401):
 * its account must not be suspended, the key must hold the route's scope, and a publishable
 * key must be on an ingest route and, when sent by a browser, from one of the account's
 * allowed origins. Each refusal is a bounded 403 with a stable `code`.
 */
export function authorize(auth: AuthContext, route: { apiScope?: ApiKeyScope; publishableKeys?: boolean }, origin: string | undefined): void {
  if (isSuspended(auth.account)) {
    throw new ProblemError('accountSuspended', 'This account is suspended: its API keys are refused until it is resumed. Contact support.', {
      extensions: { code: 'account_suspended' },
    });
  }
  const scope = route.apiScope;
  if (scope !== undefined && !auth.scopes.includes(scope)) {
    const detail =
      auth.keyType === 'publishable'
        ? `Publishable keys can only send events; this route needs the scope ${scope}. Use a secret key from your server.`
        : `This API key lacks the scope ${scope}; create a key with it.`;
    throw new ProblemError('missingScope', detail, { extensions: { code: 'missing_scope', scope } });
  }
  if (auth.keyType !== 'publishable') return;
  if (!route.publishableKeys) {
    throw new ProblemError(
      'forbidden',
      'Publishable keys can only send events (POST /v1/events, Segment browser calls); bulk and CSV jobs need a secret key from your server.',
      {
        extensions: { code: 'publishable_key' },
      },
    );
  }
  if (origin !== undefined && !(auth.account.allowedOrigins ?? []).includes(origin)) {
    throw new ProblemError('forbidden', "This origin is not among the account's allowed origins for publishable keys.", {
      extensions: { code: 'origin_not_allowed' },
    });
  }
}

/** `onKeyUsed` must be cheap and must not throw: it runs on every authenticated request. */
export function createAuthHook(controlPlane: ControlPlaneReader, onKeyUsed: (keyId: string) => void = () => {}) {
  return async (request: FastifyRequest): Promise<void> => {
    request.auth = authenticate(controlPlane, presentedKey(request.routeOptions.config.keyIn ?? 'bearer', request.headers.authorization, request.body));
    onKeyUsed(request.auth.keyId);
    authorize(request.auth, request.routeOptions.config, request.headers.origin);
  };
}

/** For handlers behind the hook: the authenticated context, which the hook guarantees. */
export function authOf(request: FastifyRequest): AuthContext {
  if (!request.auth) throw new ProblemError('unauthorized', UNAUTHORIZED_DETAIL);
  return request.auth;
}

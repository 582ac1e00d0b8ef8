import { type Account, type ControlPlaneReader, isSuspended } from '@ingest/domain';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ProblemError } from '@ingest/http';
import { csrfTokenMatches, type Session, type SessionStore } from './session.store.js';

export const SESSION_COOKIE = 'ingest_dashboard';
export const CSRF_HEADER = 'x-csrf-token';

export interface DashboardContext {
  session: Session;
  token: string;
  account: Account;
  /** The account requires a second factor and this owner has none: only enrolment is open. */
  setupSecondFactor: boolean;
}

declare module 'fastify' {
  interface FastifyRequest {
    dashboard?: DashboardContext;
  }
  interface FastifyContextConfig {
    /** Dashboard routes reachable without a session (sign-in, the session probe). */
    dashboardPublic?: boolean;
    /** A state-changing dashboard route that a suspended account may still call (sign-out, dry-runs). */
    allowedWhileSuspended?: boolean;
    /** Open to an owner whose account requires a second factor they have not set up (enrolment, session, sign-out). */
    allowedWithoutSecondFactor?: boolean;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The dashboard's request guard (a preParsing hook: nothing unauthenticated gets its body read).
 * State-changing requests must come from an allowed origin (Origin, else Referer) — also
 * sign-in, against login CSRF — and, with a session, carry its CSRF token in X-CSRF-Token.
 * SameSite=Strict already keeps the cookie off cross-site requests; these are the second and
 * third locks. The account always comes from the session, never from the request.
 */
export function createSessionGuard(deps: { sessions: SessionStore; controlPlane: ControlPlaneReader; allowedOrigins: string[] }) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    const stateChanging = !SAFE_METHODS.has(request.method);
    if (stateChanging && !originAllowed(request, deps.allowedOrigins)) {
      throw new ProblemError('forbidden', 'Cross-origin request refused: Origin (or Referer) must be this dashboard.');
    }
    const token = request.cookies[SESSION_COOKIE];
    const session = token ? await deps.sessions.get(token) : undefined;
    // An owner removed from the control plane, or moved, loses their sessions at once.
    const owner = session ? deps.controlPlane.ownerByEmail(session.email) : undefined;
    // A password reset ends the sessions signed in before it.
    const current = owner && session && owner.id === session.ownerId && owner.accountId === session.accountId && !signedInBeforeReset(owner, session);
    const account = current ? deps.controlPlane.accountById(owner.accountId) : undefined;
    if (token && session && account) {
      request.dashboard = { session, token, account, setupSecondFactor: account.requireOwnerTotp === true && owner?.totp === undefined };
    }
    if (request.routeOptions.config.dashboardPublic) return;
    if (!request.dashboard) throw new ProblemError('notSignedIn', 'Sign in to the dashboard first (the session is missing or has expired).');
    if (stateChanging && !csrfTokenMatches(request.dashboard.session, request.headers[CSRF_HEADER])) {
      throw new ProblemError('forbidden', 'The X-CSRF-Token header is missing or wrong; reload the page.');
    }
    if (request.dashboard.setupSecondFactor && !request.routeOptions.config.allowedWithoutSecondFactor) {
      throw new ProblemError('secondFactorSetupRequired', 'This account requires a second factor: set up an authenticator app on the Security page first.');
    }
    // A suspended account's owners may look, not change: no new keys (which would undo the
    // suspension), no mapping changes, no uploads, no replays.
    if (stateChanging && isSuspended(request.dashboard.account) && !request.routeOptions.config.allowedWhileSuspended) {
      throw new ProblemError('accountSuspended', 'This account is suspended: its dashboard is read-only until it is resumed.', {
        extensions: { code: 'account_suspended' },
      });
    }
  };
}

function signedInBeforeReset(owner: { passwordChangedAt?: string }, session: Session): boolean {
  return owner.passwordChangedAt !== undefined && session.createdAtMs < Date.parse(owner.passwordChangedAt);
}

function originAllowed(request: FastifyRequest, configured: string[]): boolean {
  const allowed = configured.length > 0 ? configured : [`${request.protocol}://${request.host}`];
  const origin = request.headers.origin ?? refererOrigin(request.headers.referer);
  return origin !== undefined && allowed.includes(origin);
}

function refererOrigin(referer: string | undefined): string | undefined {
  if (!referer) return undefined;
  try {
    return new URL(referer).origin;
  } catch {
    return undefined;
  }
}

/** For handlers behind the guard. */
export function dashboardOf(request: FastifyRequest): DashboardContext {
  if (!request.dashboard) throw new ProblemError('notSignedIn', 'Sign in to the dashboard first.');
  return request.dashboard;
}

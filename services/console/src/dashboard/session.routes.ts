import { SessionView, SignInBody } from '@ingest/schemas';
import { type ControlPlaneReader, decoyPasswordHash, verifyPassword } from '@ingest/domain';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { ProblemError } from '@ingest/http';
import { dashboardOf, SESSION_COOKIE } from './session.guard.js';
import type { SessionStore } from './session.store.js';
import type { RouteLimits } from './route-options.js';
import type { SignInThrottle } from './signin-throttle.js';

export interface SessionRoutesDeps {
  controlPlane: ControlPlaneReader;
  sessions: SessionStore;
  cookieSecure: boolean;
  maxSeconds: number;
  limits: RouteLimits;
  /** Per email and per account, before the password is checked; fails closed (503) without Redis. */
  throttle: SignInThrottle;
}

const SIGN_IN_FAILED = 'Email or password is wrong.';

/** Sign-in, the session probe (which hands the web app its CSRF token) and sign-out. */
export function sessionRoutes(deps: SessionRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    const setCookie = (reply: FastifyReply, value: string, maxAge: number) =>
      reply.setCookie(SESSION_COOKIE, value, { path: '/dashboard', httpOnly: true, sameSite: 'strict', secure: deps.cookieSecure, maxAge });

    app.post<{ Body: SignInBody }>(
      '/session',
      {
        ...deps.limits.signIn,
        bodyLimit: 4096,
        schema: { hide: true, body: SignInBody, response: { 200: SessionView } },
        config: { ...deps.limits.signIn.config, dashboardPublic: true },
      },
      async (request, reply) => {
        const owner = deps.controlPlane.ownerByEmail(request.body.email);
        await deps.throttle(request.body.email, owner?.accountId);
        // Unknown emails are checked against a decoy hash: same answer, same cost.
        const passwordOk = await verifyPassword(request.body.password, owner?.passwordHash ?? (await decoyPasswordHash()));
        const account = owner && passwordOk ? deps.controlPlane.accountById(owner.accountId) : undefined;
        if (!owner || !account) {
          request.log.warn({ dashboard: 'sign-in failed' }, 'dashboard sign-in refused');
          throw new ProblemError('signInFailed', SIGN_IN_FAILED);
        }
        // A new session id on every sign-in (no fixation); an old session of this browser ends.
        const previous = request.cookies[SESSION_COOKIE];
        if (previous) await deps.sessions.destroy(previous);
        const { token, session } = await deps.sessions.create({ accountId: account.id, ownerId: owner.id, email: owner.email });
        setCookie(reply, token, deps.maxSeconds);
        request.log.info({ accountId: account.id, ownerId: owner.id }, 'dashboard sign-in');
        return { email: owner.email, account: { id: account.id, name: account.name, plan: account.plan }, csrfToken: session.csrfToken };
      },
    );

    app.get('/session', { ...deps.limits.api, schema: { hide: true, response: { 200: SessionView } } }, async (request) => {
      const { session, account } = dashboardOf(request);
      return { email: session.email, account: { id: account.id, name: account.name, plan: account.plan }, csrfToken: session.csrfToken };
    });

    app.delete(
      '/session',
      { ...deps.limits.api, config: { ...deps.limits.api.config, allowedWhileSuspended: true }, schema: { hide: true } },
      async (request, reply) => {
        const { token, account } = dashboardOf(request);
        await deps.sessions.destroy(token);
        setCookie(reply, '', 0);
        request.log.info({ accountId: account.id }, 'dashboard sign-out');
        return reply.code(204).send();
      },
    );
  };
}

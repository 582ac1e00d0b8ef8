import { SessionView, SignInBody } from '@ingest/schemas';
import { type ControlPlane, decoyPasswordHash, hashPassword, type Owner, passwordNeedsRehash, verifyPassword } from '@ingest/domain';
import type { FastifyBaseLogger, FastifyPluginAsync, FastifyReply } from 'fastify';
import { ProblemError } from '@ingest/http';
import { dashboardOf, SESSION_COOKIE } from './session.guard.js';
import type { SessionStore } from './session.store.js';
import type { RouteLimits } from './route-options.js';
import type { SignInThrottle } from './signin-throttle.js';
import { DEVICE_COOKIE, DEVICE_COOKIE_MAX_AGE_SECONDS, type KnownDevices } from './known-device.js';
import type { PasswordHashGate } from './password-hash.gate.js';
import type { SecondFactor } from './second-factor.js';

export interface SessionRoutesDeps {
  controlPlane: ControlPlane;
  sessions: SessionStore;
  cookieSecure: boolean;
  maxSeconds: number;
  limits: RouteLimits;
  /** Per email and per account, before the password is checked; fails closed (503) without Redis. */
  throttle: SignInThrottle;
  /** Process-wide cap on scrypt work in progress (503 beyond). */
  hashGate: PasswordHashGate;
  devices: KnownDevices;
  secondFactor: SecondFactor;
}

const SIGN_IN_FAILED = 'Email or password is wrong.';

/** Owners whose account requires a second factor they have not set up yet: only enrolment is open. */
export function secondFactorSetupRequired(owner: Owner, account: { requireOwnerTotp?: boolean }): boolean {
  return account.requireOwnerTotp === true && owner.totp === undefined;
}

/** Sign-in, the session probe (which hands the web app its CSRF token) and sign-out. */
export function sessionRoutes(deps: SessionRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    const setCookie = (reply: FastifyReply, value: string, maxAge: number) =>
      reply.setCookie(SESSION_COOKIE, value, { path: '/dashboard', httpOnly: true, sameSite: 'strict', secure: deps.cookieSecure, maxAge });

    /*
     * Order: throttle (counts every attempt, second steps included), then the hash gate, the
     * password, then the second factor. A wrong TOTP or recovery code is a 401 like a wrong
     * password, and costs the same attempt; the page sends the password again with the code.
     */
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
        const deviceId = owner ? deps.devices.deviceOf(request.cookies[DEVICE_COOKIE], owner.id) : undefined;
        await deps.throttle(request.body.email, owner?.accountId, deviceId);
        // Unknown emails are checked against a decoy hash: same answer, same cost.
        const decoy = await decoyPasswordHash();
        const passwordOk = await deps.hashGate.run(() => verifyPassword(request.body.password, owner?.passwordHash ?? decoy));
        const account = owner && passwordOk ? deps.controlPlane.accountById(owner.accountId) : undefined;
        if (!owner || !account) {
          request.log.warn({ dashboard: 'sign-in failed', knownDevice: deviceId !== undefined }, 'dashboard sign-in refused');
          throw new ProblemError('signInFailed', SIGN_IN_FAILED);
        }
        const second = await deps.secondFactor.check(owner, request.body);
        if (second === 'missing') {
          throw new ProblemError('secondFactorRequired', 'Enter the code from your authenticator app (or a recovery code).', {
            extensions: { secondFactor: 'totp' },
          });
        }
        if (second === 'wrong') {
          request.log.warn({ dashboard: 'second factor wrong', ownerId: owner.id, knownDevice: deviceId !== undefined }, 'dashboard sign-in refused');
          throw new ProblemError('secondFactorFailed', 'The code is wrong or was used already.', { extensions: { secondFactor: 'totp' } });
        }
        await rehashIfWeak(deps, owner, request.body.password, request.log);
        // A new session id on every sign-in (no fixation); an old session of this browser ends.
        const previous = request.cookies[SESSION_COOKIE];
        if (previous) await deps.sessions.destroy(previous);
        const { token, session } = await deps.sessions.create({ accountId: account.id, ownerId: owner.id, email: owner.email });
        setCookie(reply, token, deps.maxSeconds);
        reply.setCookie(DEVICE_COOKIE, deps.devices.issue(owner.id, deviceId), {
          path: '/dashboard/api/session',
          httpOnly: true,
          sameSite: 'strict',
          secure: deps.cookieSecure,
          maxAge: DEVICE_COOKIE_MAX_AGE_SECONDS,
        });
        request.log.info({ accountId: account.id, ownerId: owner.id, secondFactor: owner.totp !== undefined }, 'dashboard sign-in');
        return {
          email: owner.email,
          account: { id: account.id, name: account.name, plan: account.plan },
          csrfToken: session.csrfToken,
          ...(secondFactorSetupRequired(owner, account) ? { secondFactorSetupRequired: true } : {}),
        };
      },
    );

    app.get(
      '/session',
      { ...deps.limits.api, config: { ...deps.limits.api.config, allowedWithoutSecondFactor: true }, schema: { hide: true, response: { 200: SessionView } } },
      async (request) => {
        const { session, account } = dashboardOf(request);
        const owner = deps.controlPlane.ownerByEmail(session.email);
        return {
          email: session.email,
          account: { id: account.id, name: account.name, plan: account.plan },
          csrfToken: session.csrfToken,
          ...(owner && secondFactorSetupRequired(owner, account) ? { secondFactorSetupRequired: true } : {}),
        };
      },
    );

    app.delete(
      '/session',
      { ...deps.limits.api, config: { ...deps.limits.api.config, allowedWhileSuspended: true, allowedWithoutSecondFactor: true }, schema: { hide: true } },
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

/**
 * A hash made with weaker scrypt parameters is replaced by one at the current ones, while the
 * password is at hand. Best effort: when the gate is full or the write fails, the sign-in stands
 * and the next one tries again.
 */
async function rehashIfWeak(deps: SessionRoutesDeps, owner: Owner, password: string, log: FastifyBaseLogger): Promise<void> {
  if (!passwordNeedsRehash(owner.passwordHash)) return;
  try {
    const passwordHash = await deps.hashGate.run(() => hashPassword(password));
    await deps.controlPlane.updateOwnerCredentials(owner.accountId, owner.email, { passwordHash });
    log.info({ accountId: owner.accountId, ownerId: owner.id }, 'owner password re-hashed at the current scrypt parameters');
  } catch (err) {
    log.warn({ err, ownerId: owner.id }, 'owner password re-hash skipped; the next sign-in retries');
  }
}

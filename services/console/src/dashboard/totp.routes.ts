import { AccountSecurityBody, TotpCodeBody, TotpEnrolmentView, TotpRecoveryCodesView, TotpStatusView } from '@ingest/schemas';
import { type ControlPlane, newRecoveryCodes, newTotpSecret, type Owner, recoveryCodeHash, totpUri } from '@ingest/domain';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { type Auditor, ProblemError } from '@ingest/http';
import { dashboardOf } from './session.guard.js';
import type { RouteLimits } from './route-options.js';
import type { SecondFactor } from './second-factor.js';
import type { SignInThrottle } from './signin-throttle.js';

export interface TotpRoutesDeps {
  controlPlane: ControlPlane;
  secondFactor: SecondFactor;
  /** Codes given to turn the factor off count on the sign-in throttle: a stolen session cannot guess its way to removing it. */
  throttle: SignInThrottle;
  /** False without DASHBOARD_SECRET_KEYS: enrolment is refused (nothing to seal the secret with). */
  keysConfigured: boolean;
  issuer: string;
  limits: RouteLimits;
  auditor: Auditor;
  now: () => number;
}

/**
 * The owner's second factor: status, enrolment (a secret shown once, enabled only after a code
 * from the app matches it), removal (with a current code) and the account's requirement.
 * Enrolment hands back ten recovery codes once; only their hashes are kept.
 */
export function totpRoutes(deps: TotpRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    const open = { ...deps.limits.api, config: { ...deps.limits.api.config, allowedWithoutSecondFactor: true } };
    const ownerOf = (request: FastifyRequest): Owner => {
      const { session } = dashboardOf(request);
      const owner = deps.controlPlane.ownerByEmail(session.email);
      if (!owner) throw new ProblemError('notSignedIn', 'Sign in to the dashboard first.');
      return owner;
    };

    app.get('/totp', { ...open, schema: { hide: true, response: { 200: TotpStatusView } } }, async (request) => {
      const owner = ownerOf(request);
      return {
        enabled: owner.totp !== undefined,
        recoveryCodesLeft: owner.totp?.recoveryCodeHashes.length ?? 0,
        accountRequiresTotp: dashboardOf(request).account.requireOwnerTotp === true,
      };
    });

    app.post('/totp/enrolment', { ...open, schema: { hide: true, response: { 200: TotpEnrolmentView } } }, async (request) => {
      const owner = ownerOf(request);
      if (!deps.keysConfigured) {
        throw new ProblemError('unavailable', 'Second factors are not available: the operator has not configured DASHBOARD_SECRET_KEYS.');
      }
      if (owner.totp) throw new ProblemError('conflict', 'A second factor is set up already; remove it first to enrol another.');
      const secret = newTotpSecret();
      await deps.secondFactor.startEnrolment(owner, secret);
      return { secret, uri: totpUri(secret, owner.email, deps.issuer) };
    });

    app.post<{ Body: TotpCodeBody }>(
      '/totp/enrolment/confirm',
      { ...open, bodyLimit: 1024, schema: { hide: true, body: TotpCodeBody, response: { 200: TotpRecoveryCodesView } } },
      async (request) => {
        const owner = ownerOf(request);
        if (owner.totp) throw new ProblemError('conflict', 'A second factor is set up already.');
        const sealed = await deps.secondFactor.confirmEnrolment(owner, request.body.code);
        if (!sealed) throw new ProblemError('validation', 'The code does not match (or the enrolment expired after 10 minutes); try the current code.');
        const recoveryCodes = newRecoveryCodes();
        const enabledAt = new Date(deps.now()).toISOString();
        await deps.controlPlane.updateOwnerCredentials(owner.accountId, owner.email, {
          totp: { sealed, enabledAt, recoveryCodeHashes: recoveryCodes.map(recoveryCodeHash) },
        });
        await deps.auditor.record(request, { action: 'owner.totp_enable', accountId: owner.accountId, target: owner.id, after: { enabledAt } });
        return { recoveryCodes };
      },
    );

    app.post<{ Body: TotpCodeBody }>(
      '/totp/remove',
      { ...deps.limits.api, bodyLimit: 1024, schema: { hide: true, body: TotpCodeBody } },
      async (request, reply) => {
        const owner = ownerOf(request);
        if (!owner.totp) throw new ProblemError('conflict', 'No second factor is set up.');
        if (dashboardOf(request).account.requireOwnerTotp) {
          throw new ProblemError('conflict', 'This account requires a second factor; turn the requirement off first.');
        }
        await deps.throttle(owner.email, owner.accountId);
        if (!(await deps.secondFactor.verifyCurrent(owner, request.body.code))) throw new ProblemError('validation', 'The code is wrong or was used already.');
        await deps.controlPlane.updateOwnerCredentials(owner.accountId, owner.email, { totp: null });
        await deps.auditor.record(request, {
          action: 'owner.totp_remove',
          accountId: owner.accountId,
          target: owner.id,
          before: { enabledAt: owner.totp.enabledAt },
        });
        return reply.code(204).send();
      },
    );

    // Only an owner who has a second factor may require one: nobody locks the account's owners
    // into a setting they could not meet themselves.
    app.put<{ Body: AccountSecurityBody }>(
      '/account/security',
      { ...deps.limits.api, bodyLimit: 1024, schema: { hide: true, body: AccountSecurityBody, response: { 200: TotpStatusView } } },
      async (request) => {
        const owner = ownerOf(request);
        const { account } = dashboardOf(request);
        if (request.body.requireOwnerTotp && !owner.totp) throw new ProblemError('conflict', 'Set up your own second factor before requiring one.');
        const updated = await deps.controlPlane.setRequireOwnerTotp(account.id, request.body.requireOwnerTotp);
        await deps.auditor.record(request, {
          action: 'account.require_owner_totp',
          accountId: account.id,
          target: account.id,
          before: { requireOwnerTotp: account.requireOwnerTotp === true },
          after: { requireOwnerTotp: updated.requireOwnerTotp === true },
        });
        return {
          enabled: owner.totp !== undefined,
          recoveryCodesLeft: owner.totp?.recoveryCodeHashes.length ?? 0,
          accountRequiresTotp: updated.requireOwnerTotp === true,
        };
      },
    );
  };
}

import { AccountIdParams, CreatedOwner, CreateOwnerBody, OwnerList, OwnerParams, type OwnerView, ResetOwnerPasswordBody } from '@ingest/schemas';
import { AppError } from '@ingest/platform';
import { type ControlPlane, generatePassword, hashPassword, type Owner } from '@ingest/domain';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor, ProblemError, problemResponses } from '@ingest/http';
import { toProblem } from './control-plane-problem.js';

const problems = (...statuses: number[]) => problemResponses(...new Set([...statuses, 400, 429, 503, 504]));

/**
 * Dashboard owners of an account, created, removed and given a new password by an admin.
 * Registered inside the admin plugin, so the admin token guards it. The password is hashed here
 * (scrypt) and never logged or audited; a generated one is returned once. Removal and a reset
 * end the owner's sessions on every gateway (the session guard reads the control plane).
 */
export function ownersRoutes(deps: { controlPlane: ControlPlane; auditor: Auditor }): FastifyPluginAsync {
  return async (app) => {
    const cp = deps.controlPlane;
    const tags = ['admin'];

    app.post<{ Params: AccountIdParams; Body: CreateOwnerBody }>(
      '/accounts/:accountId/owners',
      {
        schema: {
          summary: 'Create a dashboard owner (a generated password is shown only in this response)',
          tags,
          params: AccountIdParams,
          body: CreateOwnerBody,
          response: { 201: CreatedOwner, ...problems(400, 401, 404, 409, 503) },
        },
      },
      async (request, reply) => {
        const generated = request.body.password === undefined ? generatePassword() : undefined;
        const passwordHash = await hashPassword(request.body.password ?? generated ?? '');
        let owner: Owner;
        try {
          owner = await cp.createOwner(request.params.accountId, request.body.email, passwordHash);
        } catch (err) {
          throw ownerProblem(err);
        }
        request.log.info({ accountId: owner.accountId, ownerId: owner.id }, 'admin: owner created');
        await deps.auditor.record(request, { action: 'owner.create', accountId: owner.accountId, target: owner.email, after: toView(owner) });
        return reply.code(201).send({ owner: toView(owner), ...(generated ? { password: generated } : {}) });
      },
    );

    app.get<{ Params: AccountIdParams }>(
      '/accounts/:accountId/owners',
      { schema: { summary: "List an account's dashboard owners", tags, params: AccountIdParams, response: { 200: OwnerList, ...problems(401, 404) } } },
      async (request) => {
        if (!cp.accountById(request.params.accountId)) throw new ProblemError('notFound', `Account ${request.params.accountId} does not exist.`);
        return { owners: cp.listOwners(request.params.accountId).map(toView) };
      },
    );

    app.delete<{ Params: OwnerParams }>(
      '/accounts/:accountId/owners/:email',
      {
        schema: {
          summary: 'Remove a dashboard owner: they cannot sign in any more and their sessions end',
          tags,
          params: OwnerParams,
          response: { 200: CreatedOwner, ...problems(401, 404, 503) },
        },
      },
      async (request) => {
        const owner = await cp.removeOwner(request.params.accountId, request.params.email).catch((err: unknown) => Promise.reject(toProblem(err)));
        request.log.info({ accountId: owner.accountId, ownerId: owner.id }, 'admin: owner removed');
        await deps.auditor.record(request, { action: 'owner.remove', accountId: owner.accountId, target: owner.email, before: toView(owner), after: null });
        return { owner: toView(owner) };
      },
    );

    app.post<{ Params: OwnerParams; Body: ResetOwnerPasswordBody | undefined }>(
      '/accounts/:accountId/owners/:email/reset-password',
      {
        schema: {
          summary: "Set a dashboard owner's password (a generated one is shown only in this response); their sessions end",
          tags,
          params: OwnerParams,
          body: ResetOwnerPasswordBody,
          response: { 200: CreatedOwner, ...problems(400, 401, 404, 503) },
        },
        preValidation: async (request) => {
          request.body ??= {};
        },
      },
      async (request) => {
        const generated = request.body?.password === undefined ? generatePassword() : undefined;
        const passwordHash = await hashPassword(request.body?.password ?? generated ?? '');
        const owner = await cp
          .resetOwnerPassword(request.params.accountId, request.params.email, passwordHash)
          .catch((err: unknown) => Promise.reject(toProblem(err)));
        request.log.info({ accountId: owner.accountId, ownerId: owner.id }, 'admin: owner password reset');
        await deps.auditor.record(request, {
          action: 'owner.password_reset',
          accountId: owner.accountId,
          target: owner.email,
          after: { changedAt: owner.passwordChangedAt ?? null, generatedByServer: generated !== undefined },
        });
        return { owner: toView(owner), ...(generated ? { password: generated } : {}) };
      },
    );

    // An owner who lost both the authenticator and the recovery codes: the admin, having checked
    // who is asking, removes the second factor; the owner signs in with the password and enrols again.
    app.post<{ Params: OwnerParams }>(
      '/accounts/:accountId/owners/:email/remove-second-factor',
      {
        schema: {
          summary: "Remove a dashboard owner's second factor (TOTP and recovery codes)",
          tags,
          params: OwnerParams,
          response: { 200: CreatedOwner, ...problems(401, 404, 503) },
        },
      },
      async (request) => {
        const owner = await cp
          .updateOwnerCredentials(request.params.accountId, request.params.email, { totp: null })
          .catch((err: unknown) => Promise.reject(toProblem(err)));
        request.log.info({ accountId: owner.accountId, ownerId: owner.id }, 'admin: owner second factor removed');
        await deps.auditor.record(request, { action: 'owner.totp_remove', accountId: owner.accountId, target: owner.email, after: { secondFactor: false } });
        return { owner: toView(owner) };
      },
    );
  };
}

function toView(owner: Owner): OwnerView {
  return { id: owner.id, accountId: owner.accountId, email: owner.email, createdAt: owner.createdAt };
}

function ownerProblem(err: unknown): unknown {
  if (err instanceof AppError && err.code === 'owner_exists') return new ProblemError('conflict', 'An owner with this email exists already.', { cause: err });
  if (err instanceof AppError && err.code === 'invalid_email') {
    return new ProblemError('validation', 'The request body is invalid.', {
      errors: [{ field: '/email', code: 'invalid_format', message: err.message }],
      cause: err,
    });
  }
  return toProblem(err);
}

import { AccountIdParams, CreatedOwner, CreateOwnerBody, OwnerList, type OwnerView } from '@ingest/schemas';
import { AppError } from '@ingest/platform';
import { type ControlPlane, generatePassword, hashPassword, type Owner } from '@ingest/domain';
import type { FastifyPluginAsync } from 'fastify';
import { ProblemError, problemResponses } from '../http/problem.js';
import { toProblem } from './control-plane-problem.js';

const problems = (...statuses: number[]) => problemResponses(...new Set([...statuses, 400, 429, 503, 504]));

/**
 * Dashboard owners of an account, created by the operator. Registered inside the admin plugin,
 * so the admin token guards it. The password is hashed here (scrypt) and never logged; a
 * generated one is returned once.
 */
export function ownersRoutes(deps: { controlPlane: ControlPlane }): FastifyPluginAsync {
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

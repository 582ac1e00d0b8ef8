import {
  AdminCredentialList,
  AdminCredentialParams,
  type AdminCredentialView,
  AdminCredentialView as AdminCredentialViewSchema,
  AUDIT_PAGE_MAX,
  AuditPage,
  AuditQuery,
  CreateAdminBody,
  CreatedAdminCredential,
} from '@ingest/schemas';
import { type AdminCredential, type AdminDirectory, type AuditReader, decodeAuditCursor } from '@ingest/domain';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor, ProblemError, problemResponses } from '@ingest/http';
import { ENVIRONMENT_ADMIN_NAME } from './admin-auth.js';
import { toProblem } from './control-plane-problem.js';

const problems = (...statuses: number[]) => problemResponses(...new Set([...statuses, 400, 401, 403, 429, 503, 504]));
const DEFAULT_PAGE = 100;

/**
 * Named admins (list, create, revoke: the admin role only) and the audit log (any admin).
 * The token of a new credential is in the creation's answer only; listings show the prefix.
 */
export function adminsRoutes(deps: {
  controlPlane: AdminDirectory;
  auditor: Auditor;
  reader: AuditReader;
  environmentTokens: { previous: boolean };
}): FastifyPluginAsync {
  return async (app) => {
    const cp = deps.controlPlane;
    const tags = ['admin'];
    const environment: AdminCredentialView[] = [
      { id: 'env:ADMIN_TOKEN', name: ENVIRONMENT_ADMIN_NAME, role: 'admin', prefix: '', createdAt: '', revokedAt: null, source: 'environment' },
      ...(deps.environmentTokens.previous
        ? [
            {
              id: 'env:ADMIN_TOKEN_PREVIOUS',
              name: ENVIRONMENT_ADMIN_NAME,
              role: 'admin' as const,
              prefix: '',
              createdAt: '',
              revokedAt: null,
              source: 'environment' as const,
            },
          ]
        : []),
    ];

    app.get(
      '/admins',
      {
        config: { adminRole: 'admin' },
        schema: { summary: 'Admin credentials: names, roles, prefixes (never tokens)', tags, response: { 200: AdminCredentialList, ...problems() } },
      },
      async () => ({ admins: [...environment, ...cp.listAdminCredentials().map(toView)] }),
    );

    app.post<{ Body: CreateAdminBody }>(
      '/admins',
      {
        schema: {
          summary: 'Create an admin credential (the token is shown only in this answer); a second one for a name is how its token is rotated',
          tags,
          body: CreateAdminBody,
          response: { 201: CreatedAdminCredential, ...problems(409) },
        },
      },
      async (request, reply) => {
        const { credential, token } = await cp
          .createAdminCredential(request.body.name, request.body.role)
          .catch((err: unknown) => Promise.reject(toProblem(err)));
        request.log.info({ adminCredentialId: credential.id, adminName: credential.name, role: credential.role }, 'admin: admin credential created');
        await deps.auditor.record(request, { action: 'admin.create', accountId: null, target: credential.id, after: toView(credential) });
        return reply.code(201).send({ token, admin: toView(credential) });
      },
    );

    app.post<{ Params: AdminCredentialParams }>(
      '/admins/:credentialId/revoke',
      {
        schema: {
          summary: 'Revoke an admin credential (idempotent; every gateway refuses it within seconds)',
          tags,
          params: AdminCredentialParams,
          response: { 200: AdminCredentialViewSchema, ...problems(404) },
        },
      },
      async (request) => {
        const { credentialId } = request.params;
        if (request.admin?.credentialId === credentialId) {
          throw new ProblemError('conflict', 'A credential cannot revoke itself: revoke it with another admin credential.');
        }
        const wasActive = cp.listAdminCredentials().some((c) => c.id === credentialId && c.revokedAt === null);
        const revoked = await cp.revokeAdminCredential(credentialId).catch((err: unknown) => Promise.reject(toProblem(err)));
        request.log.info({ adminCredentialId: credentialId }, 'admin: admin credential revoked');
        if (wasActive) {
          await deps.auditor.record(request, {
            action: 'admin.revoke',
            accountId: null,
            target: credentialId,
            before: { revokedAt: null },
            after: toView(revoked),
          });
        }
        return toView(revoked);
      },
    );

    app.get<{ Querystring: AuditQuery }>(
      '/audit',
      {
        schema: {
          summary: 'The audit log, newest first: filter by account, actor (admin name or owner email), action and time; page with nextCursor',
          tags,
          querystring: AuditQuery,
          response: { 200: AuditPage, ...problems() },
        },
      },
      async (request) => {
        const q = request.query;
        return deps.reader.page({
          ...(q.accountId ? { accountId: q.accountId } : {}),
          ...(q.actor ? { actor: q.actor } : {}),
          ...(q.action ? { action: q.action } : {}),
          ...timeRange(q.from, q.to),
          ...(q.cursor ? { after: cursorOrThrow(q.cursor) } : {}),
          limit: Math.min(Number(q.limit ?? DEFAULT_PAGE), AUDIT_PAGE_MAX),
        });
      },
    );
  };
}

function toView(c: AdminCredential): AdminCredentialView {
  return { id: c.id, name: c.name, role: c.role, prefix: c.prefix, createdAt: c.createdAt, revokedAt: c.revokedAt, source: 'control-plane' };
}

/** Shared with the dashboard's audit page. */
export function cursorOrThrow(cursor: string): { atMs: number; id: string } {
  const position = decodeAuditCursor(cursor);
  if (!position)
    throw new ProblemError('validation', 'cursor is not a nextCursor of this API.', {
      errors: [{ field: '/cursor', code: 'invalid_format', message: 'unknown cursor' }],
    });
  return position;
}

function timeRange(from: string | undefined, to: string | undefined): { fromMs?: number; toMs?: number } {
  const parse = (value: string | undefined, field: string) => {
    if (value === undefined) return undefined;
    const ms = Date.parse(value);
    if (!Number.isFinite(ms))
      throw new ProblemError('validation', `${field} is not an ISO 8601 time.`, {
        errors: [{ field: `/${field}`, code: 'invalid_format', message: 'not an ISO 8601 time' }],
      });
    return ms;
  };
  const fromMs = parse(from, 'from');
  const toMs = parse(to, 'to');
  return { ...(fromMs !== undefined ? { fromMs } : {}), ...(toMs !== undefined ? { toMs } : {}) };
}

import { type AuditRecord, type AuditWriter, toAuditRecord } from '@ingest/domain';
import type { FastifyRequest } from 'fastify';
import { ProblemError } from '../http/problem.js';

/** One state change as a route describes it; who, when and from where come from the request. */
export interface AuditChange {
  /** `<thing>.<verb>`, e.g. `account.create`, `key.revoke`, `owner.password_reset`. */
  action: string;
  accountId: string | null;
  target?: string | null;
  /** Secret-free views only; the writer drops secret-named fields on top. */
  before?: object | null;
  after?: object | null;
}

export interface Auditor {
  /**
   * Records a change that has taken effect. The actor is the request's admin (admin API) or
   * signed-in owner (dashboard). When the record cannot be written the change stands, the
   * caller gets 503 saying so, and the whole record (secret-free) goes to the error log, so the
   * operator can restore it: a change is never silently unaudited.
   */
  record(request: FastifyRequest, change: AuditChange): Promise<AuditRecord>;
}

export function createAuditor(deps: { writer: AuditWriter; now: () => number }): Auditor {
  return {
    async record(request, change) {
      const record = toAuditRecord({
        at: new Date(deps.now()),
        actor: actorOf(request),
        action: change.action,
        accountId: change.accountId,
        target: change.target ?? null,
        ip: request.ip,
        requestId: request.id,
        before: change.before ?? null,
        after: change.after ?? null,
      });
      try {
        await deps.writer.append(record);
        return record;
      } catch (err) {
        request.log.error({ err, audit: record }, 'audit record could not be written');
        throw new ProblemError(
          'unavailable',
          `The change (${change.action}) was made, but the audit log could not record it; the operator has been told in the logs.`,
          {
            cause: err,
          },
        );
      }
    },
  };
}

function actorOf(request: FastifyRequest): AuditRecord['actor'] {
  if (request.admin) return { type: 'admin', name: request.admin.name, role: request.admin.role };
  if (request.dashboard) return { type: 'owner', name: request.dashboard.session.email };
  // Routes that change state are behind the admin or session guard: reaching here is a bug.
  throw new Error('audit: the request has neither an admin nor a signed-in owner');
}

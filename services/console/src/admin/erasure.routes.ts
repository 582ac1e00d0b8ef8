import { AccountIdParams, EraseBody, ErasureReapplyResult, ErasureResult } from '@ingest/schemas';
import { type ControlPlane, normalizeIdentifier } from '@ingest/domain';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor, ProblemError, problemResponses } from '@ingest/http';
import type { ErasureService } from './erasure.service.js';

export interface ErasureRoutesDeps {
  controlPlane: Pick<ControlPlane, 'accountById'>;
  service: ErasureService;
  auditor: Auditor;
}

/**
 * POST /admin/v1/accounts/{accountId}/erasures: erase a person (by email) or a company (by
 * domain) from one account (docs/erasure.md). An identity the account never saw answers 200
 * with zero counts and is audited like any other erasure: the suppression still holds, for
 * events of it that may yet arrive. The audit record names the identifier by its hash only.
 */
export function erasureRoutes(deps: ErasureRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    app.post<{ Params: AccountIdParams; Body: EraseBody }>(
      '/accounts/:accountId/erasures',
      {
        // One identifier per request: the body is tiny.
        bodyLimit: 1024,
        schema: {
          summary: 'Erase a person (email) or company (domain) from an account: events, CRM sync state; suppressed for good',
          tags: ['admin'],
          params: AccountIdParams,
          body: EraseBody,
          response: { 200: ErasureResult, ...problemResponses(400, 401, 404, 413, 429, 503, 504) },
        },
      },
      async (request) => {
        const { accountId } = request.params;
        const { type } = request.body;
        if (!deps.controlPlane.accountById(accountId)) throw new ProblemError('notFound', `Account ${accountId} does not exist.`);
        const result = await deps.service.erase(accountId, type, normalizedErasureValue(request.body));
        // Ids and counts only: never the email or domain (logs and the audit log outlive the erasure).
        request.log.info({ accountId, erasureId: result.id, type, counts: result.counts, complete: result.complete }, 'admin: identity erased');
        await deps.auditor.record(request, {
          action: 'erasure.erase',
          accountId,
          target: `${type}/sha256:${result.identifierHash}`,
          after: { erasureId: result.id, type, identifier: `sha256:${result.identifierHash}`, counts: result.counts, complete: result.complete },
        });
        return result;
      },
    );

    app.post(
      '/erasures/reapply',
      {
        schema: {
          summary: 'After restoring a ClickHouse backup: delete again the events of every erased person and company (the suppression list)',
          tags: ['admin'],
          response: { 200: ErasureReapplyResult, ...problemResponses(401, 429, 503, 504) },
        },
      },
      async (request) => {
        const result = await deps.service.reapply();
        request.log.info(result, 'admin: erasures applied again');
        await deps.auditor.record(request, { action: 'erasure.reapply', accountId: null, after: result });
        return result;
      },
    );
  };
}

/** The value as the stored events hold it (the event rules' normalisation), or a 400 naming `/value`. */
export function normalizedErasureValue(body: EraseBody): string {
  const normalized = normalizeIdentifier(body.type, body.value);
  if (!normalized.ok) {
    throw new ProblemError('validation', `The ${body.type} ${normalized.message}.`, {
      errors: [{ field: '/value', code: 'invalid', message: normalized.message }],
    });
  }
  return normalized.value;
}

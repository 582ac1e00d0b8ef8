import { AccountIdParams, AccountViewSchema, AllowedOriginsBody, PublishableEventIdsBody, ResumeAccountBody, SuspendAccountBody } from '@ingest/schemas';
import type { ControlPlane } from '@ingest/domain';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor, problemResponses } from '@ingest/http';
import { toProblem } from './control-plane-problem.js';

const problems = (...statuses: number[]) => problemResponses(...new Set([...statuses, 400, 429, 503, 504]));

/**
 * Account access (issue 17): suspension and the browser origins of publishable keys. Registered
 * inside the admin plugin, so the admin token guards it. A suspension reaches every gateway the
 * way a key revocation does (the compacted control.accounts topic, within seconds); the reason
 * is kept in the account record and logged, never shown to API callers. Operators may suspend
 * and resume; origins need the admin role. Each change is audited (a repeated one changes nothing
 * and is not).
 */
export function accessRoutes(deps: { controlPlane: ControlPlane; auditor: Auditor }): FastifyPluginAsync {
  return async (app) => {
    const cp = deps.controlPlane;
    const tags = ['admin'];
    const map = <T>(work: () => Promise<T>) => work().catch((err: unknown) => Promise.reject(toProblem(err)));
    const suspensionOf = (accountId: string) => cp.accountById(accountId)?.suspension ?? null;

    app.post<{ Params: AccountIdParams; Body: SuspendAccountBody }>(
      '/accounts/:accountId/suspend',
      {
        config: { adminRole: 'operator' },
        schema: {
          summary: 'Suspend an account: its keys answer 403, its dashboard is read-only, its jobs stop, its CRM sync waits (idempotent)',
          tags,
          params: AccountIdParams,
          body: SuspendAccountBody,
          response: { 200: AccountViewSchema, ...problems(400, 401, 404, 503) },
        },
      },
      async (request) => {
        const before = suspensionOf(request.params.accountId);
        const account = await map(() => cp.suspendAccount(request.params.accountId, request.body.reason));
        request.log.info({ accountId: account.id, reason: request.body.reason }, 'admin: account suspended');
        if (!before)
          await deps.auditor.record(request, {
            action: 'account.suspend',
            accountId: account.id,
            before: { suspension: null },
            after: { suspension: account.suspension ?? null },
          });
        return account;
      },
    );

    app.post<{ Params: AccountIdParams; Body: ResumeAccountBody | undefined }>(
      '/accounts/:accountId/resume',
      {
        config: { adminRole: 'operator' },
        schema: {
          summary: 'Resume a suspended account (idempotent)',
          tags,
          params: AccountIdParams,
          body: ResumeAccountBody,
          response: { 200: AccountViewSchema, ...problems(400, 401, 404, 503) },
        },
        preValidation: async (request) => {
          request.body ??= {};
        },
      },
      async (request) => {
        const before = suspensionOf(request.params.accountId);
        const account = await map(() => cp.resumeAccount(request.params.accountId));
        request.log.info({ accountId: account.id, reason: request.body?.reason }, 'admin: account resumed');
        if (before) {
          await deps.auditor.record(request, {
            action: 'account.resume',
            accountId: account.id,
            before: { suspension: before },
            after: { suspension: null, ...(request.body?.reason ? { reason: request.body.reason } : {}) },
          });
        }
        return account;
      },
    );

    app.put<{ Params: AccountIdParams; Body: AllowedOriginsBody }>(
      '/accounts/:accountId/allowed-origins',
      {
        schema: {
          summary: 'Set the browser origins publishable keys may send events from (CORS); [] removes them',
          tags,
          params: AccountIdParams,
          body: AllowedOriginsBody,
          response: { 200: AccountViewSchema, ...problems(400, 401, 404, 503) },
        },
      },
      async (request) => {
        const before = cp.accountById(request.params.accountId)?.allowedOrigins ?? [];
        const account = await map(() => cp.setAllowedOrigins(request.params.accountId, request.body.origins));
        request.log.info({ accountId: account.id, origins: account.allowedOrigins ?? [] }, 'admin: allowed origins set');
        await deps.auditor.record(request, {
          action: 'account.origins_set',
          accountId: account.id,
          before: { allowedOrigins: before },
          after: { allowedOrigins: account.allowedOrigins ?? [] },
        });
        return account;
      },
    );

    app.put<{ Params: AccountIdParams; Body: PublishableEventIdsBody }>(
      '/accounts/:accountId/publishable-event-ids',
      {
        schema: {
          summary: "Whether eventIds sent through publishable keys share the secret keys' dedupe space: separate (default) or shared",
          tags,
          params: AccountIdParams,
          body: PublishableEventIdsBody,
          response: { 200: AccountViewSchema, ...problems(400, 401, 404, 503) },
        },
      },
      async (request) => {
        const before = cp.accountById(request.params.accountId)?.publishableEventIds ?? 'separate';
        const account = await map(() => cp.setPublishableEventIds(request.params.accountId, request.body.mode));
        const after = account.publishableEventIds ?? 'separate';
        request.log.info({ accountId: account.id, mode: after }, 'admin: publishable event ids set');
        if (before !== after) {
          await deps.auditor.record(request, {
            action: 'account.publishable_ids_set',
            accountId: account.id,
            before: { publishableEventIds: before },
            after: { publishableEventIds: after },
          });
        }
        return account;
      },
    );
  };
}

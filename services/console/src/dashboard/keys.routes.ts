import { type ApiKeyView, DashboardCreateKeyBody, DashboardKeyIdParams, DashboardKeyList, CreatedApiKey } from '@ingest/schemas';
import { type ApiKeyRecord, type ControlPlane, effectiveScopes, keyType } from '@ingest/domain';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor, type KeyLastUsedStore } from '@ingest/http';
import { toProblem } from '../admin/control-plane-problem.js';
import { dashboardOf } from './session.guard.js';
import type { RouteLimits } from './route-options.js';

/** The signed-in owner's API keys: list (with last use), create (plaintext once), revoke. */
export function keysRoutes(deps: { controlPlane: ControlPlane; keyLastUsed: KeyLastUsedStore; limits: RouteLimits; auditor: Auditor }): FastifyPluginAsync {
  return async (app) => {
    const cp = deps.controlPlane;

    app.get('/keys', { ...deps.limits.api, schema: { hide: true, response: { 200: DashboardKeyList } } }, async (request) => {
      const { account } = dashboardOf(request);
      const keys = cp.listApiKeys(account.id);
      const lastUsed = await deps.keyLastUsed.lastUsed(keys.map((k) => k.id));
      // Newest first: the key just created is at the top.
      return { keys: keys.map((k) => toView(k, lastUsed.get(k.id) ?? null)).reverse() };
    });

    app.post<{ Body: DashboardCreateKeyBody }>(
      '/keys',
      { ...deps.limits.api, bodyLimit: 4096, schema: { hide: true, body: DashboardCreateKeyBody, response: { 201: CreatedApiKey } } },
      async (request, reply) => {
        const { account, session } = dashboardOf(request);
        const { name, scopes, type } = request.body;
        const { record, plaintext } = await cp
          .createApiKey(account.id, name, { ...(scopes ? { scopes } : {}), ...(type ? { type } : {}) })
          .catch((err: unknown) => Promise.reject(toProblem(err)));
        request.log.info(
          { accountId: account.id, keyId: record.id, ownerId: session.ownerId, type: record.type, scopes: record.scopes },
          'dashboard: api key created',
        );
        await deps.auditor.record(request, { action: 'key.create', accountId: account.id, target: record.id, after: toView(record, null) });
        return reply.code(201).send({ apiKey: plaintext, key: toView(record, null) });
      },
    );

    app.post<{ Params: DashboardKeyIdParams }>(
      '/keys/:keyId/revoke',
      { ...deps.limits.api, schema: { hide: true, params: DashboardKeyIdParams } },
      async (request) => {
        const { account, session } = dashboardOf(request);
        // The account comes from the session: another account's key id is simply not found.
        const wasActive = cp.listApiKeys(account.id).some((k) => k.id === request.params.keyId && k.revokedAt === null);
        const record = await cp.revokeApiKey(account.id, request.params.keyId).catch((err: unknown) => Promise.reject(toProblem(err)));
        request.log.info({ accountId: account.id, keyId: record.id, ownerId: session.ownerId }, 'dashboard: api key revoked');
        if (wasActive) {
          await deps.auditor.record(request, {
            action: 'key.revoke',
            accountId: account.id,
            target: record.id,
            before: { revokedAt: null },
            after: { revokedAt: record.revokedAt },
          });
        }
        return toView(record, (await deps.keyLastUsed.lastUsed([record.id])).get(record.id) ?? null);
      },
    );
  };
}

function toView(record: ApiKeyRecord, lastUsedAt: string | null): ApiKeyView {
  const { hash: _hash, ...view } = record;
  return { ...view, lastUsedAt, scopes: [...effectiveScopes(record)], type: keyType(record) };
}

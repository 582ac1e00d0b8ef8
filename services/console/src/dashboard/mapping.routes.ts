import { type CrmMapping, DeletedMappingView, DryRunResult, IfMatchHeaders, MappingVersionSummary, StoredMappingView } from '@ingest/schemas';
import type { ControlPlane, EventCheck, RecordStateReader } from '@ingest/domain';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor } from '@ingest/http';
import type { MappingCrmCheck } from '../crm/mapping-crm.check.js';
import {
  bodyValidatedByHandler,
  checkDryRunDraft,
  deleteMapping,
  dryRunResult,
  MappingPutQuery,
  mappingVersion,
  mappingVersionSummaries,
  prepareDryRun,
  storeMapping,
  withVersionTag,
} from '../admin/crm-mapping.handlers.js';
import type { RouteLimits } from './route-options.js';
import { dashboardOf } from './session.guard.js';

const CurrentMapping = Type.Object({ current: Type.Union([StoredMappingView, Type.Null()]) }, { additionalProperties: false });
const VersionList = Type.Object({ versions: Type.Array(MappingVersionSummary) }, { additionalProperties: false });
const VersionParams = Type.Object({ version: Type.String({ pattern: '^[1-9][0-9]{0,8}$' }) });

/**
 * The signed-in owner's CRM mapping: the current document, versions, store and delete (If-Match,
 * author `owner:<email>`) and dry-run. The account is the session's; the handlers are the admin
 * API's. Deleting stores a version that turns sync off; saving a mapping again turns it back on.
 */
export function mappingRoutes(deps: {
  controlPlane: ControlPlane;
  /** The crm-sink's record state (read only), so the dry-run shows the calls the sink would make now. */
  recordStates: RecordStateReader;
  validateEvent: (input: unknown, receivedAtMs: number) => EventCheck;
  /** Checks a mapping's fields against its CRM before a save, and a draft's before a dry-run. */
  mappingCheck: MappingCrmCheck;
  limits: RouteLimits;
  now: () => number;
  auditor: Auditor;
}): FastifyPluginAsync {
  return async (app) => {
    const cp = deps.controlPlane;
    const handlerValidatesBody = bodyValidatedByHandler();

    app.get('/mapping', { ...deps.limits.api, schema: { hide: true, response: { 200: CurrentMapping } } }, async (request, reply) => {
      const current = cp.currentMapping(dashboardOf(request).account.id) ?? null;
      if (current) withVersionTag(reply, current);
      return { current };
    });

    app.put<{ Headers: { 'if-match'?: string }; Querystring: { check?: 'skip' }; Body: unknown }>(
      '/mapping',
      {
        ...deps.limits.api,
        bodyLimit: 256 * 1024,
        validatorCompiler: handlerValidatesBody,
        schema: { hide: true, headers: IfMatchHeaders, querystring: MappingPutQuery, response: { 201: StoredMappingView } },
      },
      async (request, reply) => {
        const { account, session } = dashboardOf(request);
        const previous = cp.currentMapping(account.id)?.version ?? null;
        // "Save without checking" is the owner's explicit choice when the CRM cannot be asked; the audit log says so.
        const unchecked = request.query.check === 'skip';
        const fitsCrm = unchecked ? undefined : (m: CrmMapping) => deps.mappingCheck.check(account.id, m);
        const stored = await storeMapping(cp, account.id, request.body, `owner:${session.email}`, request.headers['if-match'], fitsCrm);
        request.log.info(
          { accountId: account.id, version: stored.version, ownerId: session.ownerId, checkedAgainstCrm: !unchecked },
          'dashboard: crm mapping stored',
        );
        await deps.auditor.record(request, {
          action: 'mapping.put',
          accountId: account.id,
          target: `version ${stored.version}`,
          before: { version: previous },
          after: { version: stored.version, ...(unchecked ? { checkedAgainstCrm: false } : {}) },
        });
        return withVersionTag(reply, stored).code(201).send(stored);
      },
    );

    app.delete<{ Headers: { 'if-match'?: string } }>(
      '/mapping',
      { ...deps.limits.api, schema: { hide: true, headers: IfMatchHeaders, response: { 200: DeletedMappingView } } },
      async (request) => {
        const { account, session } = dashboardOf(request);
        const previous = cp.currentMapping(account.id)?.version ?? null;
        const deleted = await deleteMapping(cp, account.id, `owner:${session.email}`, request.headers['if-match']);
        request.log.info({ accountId: account.id, version: deleted.version, ownerId: session.ownerId }, 'dashboard: crm mapping deleted');
        await deps.auditor.record(request, {
          action: 'mapping.delete',
          accountId: account.id,
          target: `version ${deleted.version}`,
          before: { version: previous },
          after: { version: deleted.version, deleted: true },
        });
        return deleted;
      },
    );

    app.get('/mapping/versions', { ...deps.limits.api, schema: { hide: true, response: { 200: VersionList } } }, async (request) => ({
      versions: mappingVersionSummaries(cp, dashboardOf(request).account.id),
    }));

    app.get<{ Params: { version: string } }>(
      '/mapping/versions/:version',
      { ...deps.limits.api, schema: { hide: true, params: VersionParams, response: { 200: StoredMappingView } } },
      async (request, reply) => {
        const found = mappingVersion(cp, dashboardOf(request).account.id, Number(request.params.version));
        return withVersionTag(reply, found).send(found);
      },
    );

    app.post<{ Body: unknown }>(
      '/mapping/dry-run',
      {
        ...deps.limits.api,
        config: { ...deps.limits.api.config, allowedWhileSuspended: true },
        bodyLimit: 256 * 1024,
        validatorCompiler: handlerValidatesBody,
        schema: { hide: true, response: { 200: DryRunResult } },
      },
      async (request) => {
        const { account } = dashboardOf(request);
        const prepared = prepareDryRun({ controlPlane: cp, validateEvent: deps.validateEvent, now: deps.now }, account.id, request.body);
        await checkDryRunDraft(prepared, (m) => deps.mappingCheck.check(account.id, m), request.log);
        request.log.info({ accountId: account.id, mappingVersion: prepared.mappingVersion }, 'dashboard: crm dry-run');
        return dryRunResult(prepared, { mappings: cp, reader: deps.recordStates, now: deps.now });
      },
    );
  };
}

import {
  CrmAccountParams,
  CrmCredentialBody as CrmCredentialBodySchema,
  CrmCredentialList,
  CrmCredentialView as CrmCredentialViewSchema,
  CrmMapping,
  type CrmMapping as CrmMappingDoc,
  CredentialParams,
  DeletedCredentialView,
  DeletedMappingView,
  DryRunRequest,
  DryRunResult,
  IfMatchHeaders,
  MappingVersionList,
  MappingVersionParams,
  StoredMappingView,
} from '@ingest/schemas';
import { type ControlPlane, createOutboundPolicy, type EventCheck, type OutboundPolicy, type RecordStateReader } from '@ingest/domain';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor, ProblemError, problemResponses } from '@ingest/http';
import { deleteCredential, storeCredential, toCredentialView } from './crm-credentials.handlers.js';
import { createConnectionChannel } from '../crm/connection-channel.client.js';
import { createMappingCrmCheck, type MappingCrmCheck } from '../crm/mapping-crm.check.js';
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
} from './crm-mapping.handlers.js';

export interface CrmRoutesDeps {
  controlPlane: ControlPlane;
  /** The same event rules as POST /v1/events, so a dry-run sees the event the sink would. */
  validateEvent: (input: unknown, receivedAtMs: number) => EventCheck;
  /** The crm-sink's record state and ledgers (Redis, same key prefix), read-only: the dry-run shows calls for the current state. */
  recordStates: RecordStateReader;
  /** Where credentials may point (CRM_ALLOW_HTTP, CRM_ALLOWED_CIDRS); default https and public addresses only. */
  outboundPolicy?: OutboundPolicy;
  /** Checks mappings against their CRM before a save (and drafts before a dry-run); default: a channel that is not configured, so saves need `?check=skip`. */
  mappingCheck?: MappingCrmCheck;
  now: () => number;
  auditor: Auditor;
}

interface AccountParams {
  accountId: string;
}

const tags = ['admin', 'crm'];
/** A mapping version's author: `admin` for the environment's token (as before named admins), else `admin:<name>`. */
const mappingAuthor = (request: { admin?: { name: string; credentialId: string } }) =>
  !request.admin || request.admin.credentialId.startsWith('env:') ? 'admin' : `admin:${request.admin.name}`;
// Every admin route can also answer 400 (malformed ids), 401, 429 and 503.
const problems = (...statuses: number[]) => problemResponses(...new Set([...statuses, 400, 401, 429, 503, 504]));

/**
 * CRM mapping versions, dry-runs and credentials of an account, under the admin API (its
 * parent plugin checks the operator token). Mapping documents and credentials are validated
 * by the control plane, which lists every error with a JSON Pointer; the routes validate ids
 * and headers only. Logs carry account ids, versions and credential names: never a secret or
 * an event's contents.
 */
export function crmRoutes(deps: CrmRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    const cp = deps.controlPlane;
    const handlerValidatesBody = bodyValidatedByHandler();
    const credentialWrites = { controlPlane: cp, outbound: deps.outboundPolicy ?? createOutboundPolicy(), auditor: deps.auditor, who: 'admin' as const };
    const mappingCheck =
      deps.mappingCheck ??
      createMappingCrmCheck({ channel: createConnectionChannel({ url: 'http://127.0.0.1', token: '', timeoutMs: 1_000 }), controlPlane: cp });

    app.put<{ Params: AccountParams; Headers: { 'if-match'?: string }; Querystring: { check?: 'skip' }; Body: unknown }>(
      '/accounts/:accountId/crm/mapping',
      {
        validatorCompiler: handlerValidatesBody,
        schema: {
          summary: 'Store a new version of the CRM mapping (If-Match: the version you edited)',
          tags,
          params: CrmAccountParams,
          headers: IfMatchHeaders,
          querystring: MappingPutQuery,
          body: CrmMapping,
          response: { 201: StoredMappingView, ...problems(404, 412, 502) },
        },
      },
      async (request, reply) => {
        const { accountId } = request.params;
        // Unknown account, then the document, then If-Match.
        requireAccount(cp, accountId);
        const previous = cp.currentMapping(accountId)?.version ?? null;
        const unchecked = request.query.check === 'skip';
        const fitsCrm = unchecked ? undefined : (m: CrmMappingDoc) => mappingCheck.check(accountId, m);
        const stored = await storeMapping(cp, accountId, request.body, mappingAuthor(request), request.headers['if-match'], fitsCrm);
        request.log.info({ accountId, version: stored.version, checkedAgainstCrm: !unchecked }, 'admin: crm mapping stored');
        await deps.auditor.record(request, {
          action: 'mapping.put',
          accountId,
          target: `version ${stored.version}`,
          before: { version: previous },
          after: { version: stored.version, ...(unchecked ? { checkedAgainstCrm: false } : {}) },
        });
        return withVersionTag(reply, stored).code(201).send(stored);
      },
    );

    app.get<{ Params: AccountParams }>(
      '/accounts/:accountId/crm/mapping',
      {
        schema: {
          summary: 'The current CRM mapping (ETag: its version)',
          tags,
          params: CrmAccountParams,
          response: { 200: StoredMappingView, ...problems(404) },
        },
      },
      async (request, reply) => {
        const { accountId } = request.params;
        requireAccount(cp, accountId);
        const current = cp.currentMapping(accountId);
        if (!current) {
          const deleted = cp.mappingVersions(accountId).at(-1);
          throw new ProblemError(
            'notFound',
            deleted ? `The CRM mapping of account ${accountId} was deleted in version ${deleted.version}.` : `Account ${accountId} has no CRM mapping yet.`,
          );
        }
        return withVersionTag(reply, current).send(current);
      },
    );

    app.delete<{ Params: AccountParams; Headers: { 'if-match'?: string } }>(
      '/accounts/:accountId/crm/mapping',
      {
        schema: {
          summary: 'Delete the CRM mapping: stores a version that stops sync (history is kept; a later PUT starts again)',
          tags,
          params: CrmAccountParams,
          headers: IfMatchHeaders,
          response: { 200: DeletedMappingView, ...problems(404, 412) },
        },
      },
      async (request) => {
        const { accountId } = request.params;
        requireAccount(cp, accountId);
        const previous = cp.currentMapping(accountId)?.version ?? null;
        const deleted = await deleteMapping(cp, accountId, mappingAuthor(request), request.headers['if-match']);
        request.log.info({ accountId, version: deleted.version }, 'admin: crm mapping deleted');
        await deps.auditor.record(request, {
          action: 'mapping.delete',
          accountId,
          target: `version ${deleted.version}`,
          before: { version: previous },
          after: { version: deleted.version, deleted: true },
        });
        return deleted;
      },
    );

    app.get<{ Params: AccountParams }>(
      '/accounts/:accountId/crm/mapping/versions',
      {
        schema: {
          summary: 'Every version of the CRM mapping, newest first',
          tags,
          params: CrmAccountParams,
          response: { 200: MappingVersionList, ...problems(404) },
        },
      },
      async (request) => {
        const { accountId } = request.params;
        requireAccount(cp, accountId);
        return { accountId, versions: mappingVersionSummaries(cp, accountId) };
      },
    );

    app.get<{ Params: { accountId: string; version: string } }>(
      '/accounts/:accountId/crm/mapping/versions/:version',
      {
        schema: { summary: 'One version of the CRM mapping', tags, params: MappingVersionParams, response: { 200: StoredMappingView, ...problems(404) } },
      },
      async (request, reply) => {
        const { accountId } = request.params;
        const version = Number(request.params.version);
        requireAccount(cp, accountId);
        const found = mappingVersion(cp, accountId, version);
        return withVersionTag(reply, found).send(found);
      },
    );

    app.post<{ Params: AccountParams; Body: { event: unknown; mapping?: unknown } }>(
      '/accounts/:accountId/crm/mapping/dry-run',
      {
        // Writes nothing: operators may run it.
        config: { adminRole: 'operator' },
        validatorCompiler: handlerValidatesBody,
        schema: {
          summary: 'Show the CRM operations and exact HTTP calls an event would cause now (current mapping or a draft); writes nothing',
          tags,
          params: CrmAccountParams,
          body: DryRunRequest,
          response: { 200: DryRunResult, ...problems(404) },
        },
      },
      async (request) => {
        const { accountId } = request.params;
        requireAccount(cp, accountId);
        const prepared = prepareDryRun({ controlPlane: cp, validateEvent: deps.validateEvent, now: deps.now }, accountId, request.body);
        await checkDryRunDraft(prepared, (m) => mappingCheck.check(accountId, m), request.log);
        request.log.info({ accountId, mappingVersion: prepared.mappingVersion }, 'admin: crm dry-run');
        return dryRunResult(prepared, { mappings: cp, reader: deps.recordStates, now: deps.now });
      },
    );

    app.put<{ Params: { accountId: string; name: string }; Body: unknown }>(
      '/accounts/:accountId/crm/credentials/:name',
      {
        validatorCompiler: handlerValidatesBody,
        schema: {
          summary: 'Store a CRM credential (the secret is write-only)',
          tags,
          params: CredentialParams,
          body: CrmCredentialBodySchema,
          response: { 200: CrmCredentialViewSchema, ...problems(404) },
        },
      },
      async (request) => {
        const { accountId, name } = request.params;
        return storeCredential(credentialWrites, request, accountId, name, request.body);
      },
    );

    app.delete<{ Params: { accountId: string; name: string } }>(
      '/accounts/:accountId/crm/credentials/:name',
      {
        schema: {
          summary: 'Delete a CRM credential (a tombstone: compaction removes the secret); 409 while the current mapping uses it',
          tags,
          params: CredentialParams,
          response: { 200: DeletedCredentialView, ...problems(404, 409) },
        },
      },
      async (request) => {
        const { accountId, name } = request.params;
        requireAccount(cp, accountId);
        await deleteCredential(credentialWrites, request, accountId, name);
        return { accountId, name, deleted: true as const };
      },
    );

    app.get<{ Params: AccountParams }>(
      '/accounts/:accountId/crm/credentials',
      {
        schema: {
          summary: 'CRM credentials: names, types and non-secret fields',
          tags,
          params: CrmAccountParams,
          response: { 200: CrmCredentialList, ...problems(404) },
        },
      },
      async (request) => {
        const { accountId } = request.params;
        requireAccount(cp, accountId);
        return { credentials: cp.listCrmCredentials(accountId).map(toCredentialView) };
      },
    );
  };
}

function requireAccount(cp: ControlPlane, accountId: string): void {
  if (!cp.accountById(accountId)) throw new ProblemError('notFound', `Account ${accountId} does not exist.`);
}

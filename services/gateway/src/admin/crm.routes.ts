import {
  CrmAccountParams,
  type CrmCredentialBody,
  CrmCredentialBody as CrmCredentialBodySchema,
  CrmCredentialList,
  type CrmCredentialView,
  CrmCredentialView as CrmCredentialViewSchema,
  CrmMapping,
  CredentialParams,
  DryRunEnvelope,
  DryRunRequest,
  DryRunResult,
  IfMatchHeaders,
  MappingVersionList,
  MappingVersionParams,
  StoredMappingView,
} from '@ingest/schemas';
import {
  type ControlPlane,
  type EventCheck,
  InvalidConfigError,
  MappingVersionMismatchError,
  type RecordStateReader,
  type StoredCrmCredential,
  type StoredMapping,
  toEventRecord,
  validateMapping,
} from '@ingest/shared';
import type { TSchema } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import type { FastifyPluginAsync, FastifyReply, FastifySchemaCompiler } from 'fastify';
import { type FieldError, ProblemError, problemResponses } from '../http/problem.js';
import { toProblem } from './admin.routes.js';
import { dryRun } from './crm.dry-run.js';

export interface CrmRoutesDeps {
  controlPlane: ControlPlane;
  /** The same event rules as POST /v1/events, so a dry-run sees the event the sink would. */
  validateEvent: (input: unknown, receivedAtMs: number) => EventCheck;
  /** The crm-sink's record state and ledgers (Redis, same key prefix), read-only: the dry-run shows calls for the current state. */
  recordStates: RecordStateReader;
  now: () => number;
}

interface AccountParams {
  accountId: string;
}

const tags = ['admin', 'crm'];
const AUTHOR = 'admin';
// Every admin route can also answer 400 (malformed ids), 401, 429 and 503.
const problems = (...statuses: number[]) => problemResponses(...new Set([...statuses, 400, 401, 429, 503]));

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

    app.put<{ Params: AccountParams; Headers: { 'if-match'?: string }; Body: unknown }>(
      '/accounts/:accountId/crm/mapping',
      {
        validatorCompiler: handlerValidatesBody,
        schema: {
          summary: 'Store a new version of the CRM mapping (If-Match: the version you edited)',
          tags,
          params: CrmAccountParams,
          headers: IfMatchHeaders,
          body: CrmMapping,
          response: { 201: StoredMappingView, ...problems(404, 412) },
        },
      },
      async (request, reply) => {
        const { accountId } = request.params;
        // Unknown account, then the document, then If-Match: a broken request hears what is broken
        // before whether it is stale. The store checks all three again after reading to the end.
        requireAccount(cp, accountId);
        const check = validateMapping(request.body);
        if (!check.ok) throw mappingInvalid(check.errors);
        const expectedVersion = expectedVersionOf(cp, accountId, request.headers['if-match']);
        const stored = await mapErrors(() => cp.putMapping(accountId, check.mapping, AUTHOR, { expectedVersion }));
        request.log.info({ accountId, version: stored.version }, 'admin: crm mapping stored');
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
        if (!current) throw new ProblemError('notFound', `Account ${accountId} has no CRM mapping yet.`);
        return withVersionTag(reply, current).send(current);
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
        const versions = cp.mappingVersions(accountId).map(({ version, createdAt, author }) => ({ version, createdAt, author }));
        return { accountId, versions: versions.reverse() };
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
        const found = cp.mappingVersions(accountId).find((v) => v.version === version);
        if (!found) throw new ProblemError('notFound', `Account ${accountId} has no CRM mapping version ${version}.`);
        return withVersionTag(reply, found).send(found);
      },
    );

    app.post<{ Params: AccountParams; Body: { event: unknown; mapping?: unknown } }>(
      '/accounts/:accountId/crm/mapping/dry-run',
      {
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
        const body = checkEnvelope(request.body);
        const receivedAtMs = deps.now();
        const errors: FieldError[] = [];
        const check = deps.validateEvent(body.event, receivedAtMs);
        if (!check.ok) errors.push(...check.errors.map((e) => ({ field: `/event${e.field}`, code: e.code, message: e.message })));
        let draft: StoredMapping['mapping'] | undefined;
        if (body.mapping !== undefined) {
          const mappingCheck = validateMapping(body.mapping);
          if (mappingCheck.ok) draft = mappingCheck.mapping;
          else errors.push(...mappingCheck.errors.map((e) => ({ field: `/mapping${e.field}`, code: e.code, message: e.message })));
        }
        if (errors.length > 0 || !check.ok) throw new ProblemError('validation', 'The event or the draft mapping is invalid.', { errors });

        const current = draft === undefined ? cp.currentMapping(accountId) : undefined;
        const mapping = draft ?? current?.mapping;
        if (mapping === undefined) throw new ProblemError('notFound', `Account ${accountId} has no CRM mapping yet; send a draft as \`mapping\`.`);
        const record = toEventRecord(check.event, { accountId, receivedAtMs, source: 'api', jobId: null });
        request.log.info({ accountId, mappingVersion: current?.version ?? null }, 'admin: crm dry-run');
        return dryRun({ accountId, mapping, mappingVersion: current?.version ?? null, record, mappings: cp, reader: deps.recordStates, now: deps.now });
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
        const stored = await mapErrors(() => cp.putCrmCredential(accountId, name, request.body as CrmCredentialBody));
        request.log.info({ accountId, credentialName: name, crmType: stored.credential.type }, 'admin: crm credential stored');
        return toCredentialView(stored);
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

/**
 * The documented body schema stays in OpenAPI, but the route lets the body through: the control
 * plane's validator (or the dry-run's) gives precise, complete errors. Params and headers are
 * validated as usual.
 */
function bodyValidatedByHandler(): FastifySchemaCompiler<unknown> {
  const ajv = new Ajv({ allErrors: true, strict: false, removeAdditional: false, coerceTypes: false, useDefaults: false });
  return ({ schema, httpPart }) => (httpPart === 'body' ? () => true : ajv.compile(schema as TSchema));
}

let validateDryRunEnvelope: ReturnType<Ajv['compile']> | undefined;

function checkEnvelope(body: unknown): { event: unknown; mapping?: unknown } {
  validateDryRunEnvelope ??= new Ajv({ allErrors: true, strict: false }).compile(DryRunEnvelope);
  if (validateDryRunEnvelope(body)) return body as { event: unknown; mapping?: unknown };
  const errors = (validateDryRunEnvelope.errors ?? []).map((e) => {
    if (e.keyword === 'required') return { field: `/${String(e.params.missingProperty)}`, code: 'required', message: 'is required' };
    if (e.keyword === 'additionalProperties')
      return { field: `/${String(e.params.additionalProperty)}`, code: 'unknown_field', message: 'is not a known field' };
    return { field: e.instancePath || '/', code: 'invalid_type', message: e.message ?? 'is invalid' };
  });
  throw new ProblemError('validation', 'The request body must be an object with `event` and optionally `mapping`.', { errors });
}

/**
 * `"3"`, `W/"3"` or `3` name version 3; `*` means "whatever is current, as long as one is". The
 * header's schema (IF_MATCH_PATTERN) has refused anything else with 400 already.
 */
function expectedVersionOf(cp: ControlPlane, accountId: string, ifMatch: string | undefined): number | undefined {
  if (ifMatch === undefined) return undefined;
  const value = ifMatch.trim();
  if (value === '*') {
    const current = cp.currentMapping(accountId)?.version;
    if (current === undefined) throw preconditionFailed(null, value);
    return current;
  }
  return Number(/[0-9]+/.exec(value)?.[0]);
}

function mappingInvalid(errors: FieldError[]): ProblemError {
  return new ProblemError('validation', `The mapping document is invalid: ${errors.length} error(s).`, {
    errors: errors.map((e) => ({ ...e, field: e.field === '' ? '/' : e.field })),
  });
}

function preconditionFailed(current: number | null, ifMatch: string): ProblemError {
  const now = current === null ? 'there is no mapping yet' : `version ${current} is current`;
  return new ProblemError(
    'preconditionFailed',
    `If-Match ${ifMatch.slice(0, 40)} does not match: ${now}. Read the current version and apply your change to it.`,
    {
      extensions: { currentVersion: current },
    },
  );
}

function withVersionTag(reply: FastifyReply, stored: StoredMapping): FastifyReply {
  return reply.header('etag', `"${stored.version}"`);
}

function requireAccount(cp: ControlPlane, accountId: string): void {
  if (!cp.accountById(accountId)) throw new ProblemError('notFound', `Account ${accountId} does not exist.`);
}

/** Non-secret fields by allow-list, so a secret field added later stays hidden by default. */
function toCredentialView(stored: StoredCrmCredential): CrmCredentialView {
  const c = stored.credential;
  const view: CrmCredentialView = { name: stored.name, type: c.type, updatedAt: stored.updatedAt };
  if (c.type === 'hubspot' && c.baseUrl !== undefined) view.baseUrl = c.baseUrl;
  if (c.type === 'salesforce') {
    view.instanceUrl = c.instanceUrl;
    if (c.apiVersion !== undefined) view.apiVersion = c.apiVersion;
    if (c.contactExternalIdField !== undefined) view.contactExternalIdField = c.contactExternalIdField;
    if (c.accountExternalIdField !== undefined) view.accountExternalIdField = c.accountExternalIdField;
  }
  if (c.type === 'webhook') view.url = c.url;
  return view;
}

async function mapErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof InvalidConfigError) {
      if (err.code === 'mapping_invalid') throw mappingInvalid(err.errors);
      throw new ProblemError('validation', `The credential is invalid: ${err.errors.length} error(s).`, {
        errors: err.errors.map((e) => ({ ...e, field: e.field === '' ? '/' : e.field })),
        cause: err,
      });
    }
    if (err instanceof MappingVersionMismatchError) throw preconditionFailed(err.currentVersion, `"${err.expectedVersion}"`);
    throw toProblem(err);
  }
}

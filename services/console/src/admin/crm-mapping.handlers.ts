import { type CrmMapping, DryRunEnvelope, type EventRecord, compileValidator, createAjv } from '@ingest/schemas';
import { AppError } from '@ingest/platform';
import {
  type ControlPlane,
  type EventCheck,
  InvalidConfigError,
  type MappingReader,
  MappingVersionMismatchError,
  type RecordStateReader,
  type StoredMapping,
  toEventRecord,
  validateMapping,
} from '@ingest/domain';
import { type TSchema, Type } from '@sinclair/typebox';
import type { ValidateFunction } from 'ajv';
import type { FastifyReply, FastifySchemaCompiler } from 'fastify';
import { type FieldError, ProblemError } from '@ingest/http';
import { toProblem } from './control-plane-problem.js';
import { dryRun } from './crm.dry-run.js';

/**
 * The mapping handlers shared by the admin API (any account, author "admin") and the dashboard
 * (the session's account, author "owner:<email>"): store a version with If-Match, read versions,
 * dry-run an event. Callers check that the account exists.
 */

/** Checks a valid mapping against its CRM (mapping-crm.check.ts); absent: the caller chose to save without checking. */
export type CrmFitCheck = (mapping: CrmMapping) => Promise<void>;

/** `?check=skip`: save without asking the CRM (audited by the routes). */
export const MappingPutQuery = Type.Object(
  { check: Type.Optional(Type.Literal('skip', { description: 'Save without checking the fields against the CRM (the save is audited as unchecked).' })) },
  { additionalProperties: false },
);

/**
 * Validate, check If-Match, check against the CRM, store. Errors: 400 with JSON Pointers,
 * 412 with the current version, and the CRM check's problems (mapping-crm.check.ts).
 */
export async function storeMapping(
  cp: ControlPlane,
  accountId: string,
  body: unknown,
  author: string,
  ifMatch: string | undefined,
  fitsCrm?: CrmFitCheck,
): Promise<StoredMapping> {
  // The document, then If-Match, then the CRM: a broken request hears what is broken before
  // whether it is stale, and a stale one costs no CRM call. The store checks again after reading to the end.
  const check = validateMapping(body);
  if (!check.ok) throw mappingInvalid(check.errors);
  const expectedVersion = expectedVersionOf(cp, accountId, ifMatch);
  if (fitsCrm) {
    // A stale edit hears 412 before the CRM is asked: its author must merge first anyway.
    const current = cp.currentMapping(accountId)?.version ?? cp.mappingVersions(accountId).at(-1)?.version ?? null;
    if (expectedVersion !== undefined && current !== expectedVersion) throw preconditionFailed(current, `"${expectedVersion}"`);
    await fitsCrm(check.mapping);
  }
  return mapErrors(() => cp.putMapping(accountId, check.mapping, author, { expectedVersion }));
}

/** Every version's summary, newest first. */
export function mappingVersionSummaries(cp: ControlPlane, accountId: string): { version: number; createdAt: string; author: string; deleted?: true }[] {
  return cp
    .mappingVersions(accountId)
    .map(({ version, createdAt, author, deleted }) => ({ version, createdAt, author, ...(deleted ? { deleted } : {}) }))
    .reverse();
}

/** Stores a version that deletes the mapping (If-Match as for a put). 404 when there is none; 412 when stale. */
export async function deleteMapping(
  cp: ControlPlane,
  accountId: string,
  author: string,
  ifMatch: string | undefined,
): Promise<{ accountId: string; version: number; createdAt: string; author: string; deleted: true }> {
  const expectedVersion = expectedVersionOf(cp, accountId, ifMatch);
  const stored = await mapErrors(() => cp.deleteMapping(accountId, author, { expectedVersion }));
  return { accountId, version: stored.version, createdAt: stored.createdAt, author: stored.author, deleted: true };
}

export function mappingVersion(cp: ControlPlane, accountId: string, version: number): StoredMapping {
  const kept = cp.mappingVersions(accountId);
  const found = kept.find((v) => v.version === version);
  if (!found) {
    const oldest = kept[0]?.version;
    const older = oldest !== undefined && version > 0 && version < oldest;
    throw new ProblemError(
      'notFound',
      older
        ? `Version ${version} of account ${accountId}'s CRM mapping is older than the ${kept.length} newest versions that are kept readable (from ${oldest}).`
        : `Account ${accountId} has no CRM mapping version ${version}.`,
    );
  }
  return found;
}

export interface PreparedDryRun {
  accountId: string;
  mapping: StoredMapping['mapping'];
  mappingVersion: number | null;
  record: EventRecord;
  /** The body carried a draft mapping (not yet checked against the CRM). */
  draft: boolean;
}

/**
 * A draft's fields checked against the CRM, as a save would: misfits are 400s with pointers into
 * `/mapping`. When the CRM cannot be asked the dry-run goes on unchecked: it writes nothing, and
 * the save will say why it cannot check.
 */
export async function checkDryRunDraft(prepared: PreparedDryRun, fitsCrm: CrmFitCheck, log: { warn(o: object, m: string): void }): Promise<void> {
  if (!prepared.draft) return;
  try {
    await fitsCrm(prepared.mapping);
  } catch (err) {
    if (!(err instanceof ProblemError)) throw err;
    // Fields that do not fit stop the dry-run; a credential not stored (or for another CRM) does not: the dry-run shows that itself.
    if (err.kind === 'validation' && (err.errors ?? []).every((e) => e.field?.startsWith('/rules/'))) {
      throw new ProblemError('validation', err.detail, { errors: (err.errors ?? []).map((e) => ({ ...e, field: `/mapping${e.field ?? ''}` })) });
    }
    log.warn({ accountId: prepared.accountId, problem: err.kind }, 'crm dry-run: draft not checked against the CRM');
  }
}

/** Check the dry-run body (event and optional draft mapping, every error with a pointer) and pick the mapping. */
export function prepareDryRun(
  deps: { controlPlane: ControlPlane; validateEvent: (input: unknown, receivedAtMs: number) => EventCheck; now: () => number },
  accountId: string,
  rawBody: unknown,
): PreparedDryRun {
  const body = checkEnvelope(rawBody);
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

  const current = draft === undefined ? deps.controlPlane.currentMapping(accountId) : undefined;
  const mapping = draft ?? current?.mapping;
  if (mapping === undefined) throw new ProblemError('notFound', `Account ${accountId} has no CRM mapping yet; send a draft as \`mapping\`.`);
  const record = toEventRecord(check.event, { accountId, receivedAtMs, source: 'api', jobId: null });
  return { accountId, mapping, mappingVersion: current?.version ?? null, record, draft: draft !== undefined };
}

/**
 * The planned operations, every rule's outcome and the exact CRM calls the sink would make with
 * the account's current sink state. Reads Redis, writes nothing.
 */
export function dryRunResult(prepared: PreparedDryRun, deps: { mappings: MappingReader; reader: RecordStateReader; now: () => number }) {
  return dryRun({ ...prepared, ...deps });
}

/**
 * The documented body schema stays in OpenAPI, but the route lets the body through: the control
 * plane's validator (or the dry-run's) gives precise, complete errors. Params and headers are
 * validated as usual.
 */
export function bodyValidatedByHandler(): FastifySchemaCompiler<unknown> {
  const ajv = createAjv('all');
  return ({ schema, httpPart }) => (httpPart === 'body' ? () => true : ajv.compile(schema as TSchema));
}

let validateDryRunEnvelope: ValidateFunction | undefined;

function checkEnvelope(body: unknown): { event: unknown; mapping?: unknown } {
  validateDryRunEnvelope ??= compileValidator(DryRunEnvelope, 'all');
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

export function withVersionTag(reply: FastifyReply, stored: StoredMapping): FastifyReply {
  return reply.header('etag', `"${stored.version}"`);
}

export async function mapErrors<T>(work: () => Promise<T>): Promise<T> {
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
    if (err instanceof AppError && (err.code === 'mapping_not_found' || err.code === 'crm_credential_not_found')) {
      throw new ProblemError('notFound', `${err.message[0]?.toUpperCase() ?? ''}${err.message.slice(1)}.`, { cause: err });
    }
    if (err instanceof AppError && err.code === 'crm_credential_in_use') throw new ProblemError('conflict', `${err.message}.`, { cause: err });
    throw toProblem(err);
  }
}

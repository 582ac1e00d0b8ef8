import type { FastifyInstance, FastifyReply } from 'fastify';
import { type FakeCrmState, type FakeRecord, salesforceError } from './fake-crm.state.js';
import { parseSoqlInQuery } from './fake-soql.js';

/**
 * The Salesforce REST endpoints the adapter calls: sObject Collections upsert by external id
 * (at most 200 records, `allOrNone: false`, one save result per record) and the SOQL query,
 * paged through `nextRecordsUrl` query locators (`salesforcePaging`: page size, an endless
 * `done: false`, a foreign `nextRecordsUrl`). Records are kept per sObject, keyed by their
 * external id value.
 * A Contact's `AccountId` must name an existing Account (INVALID_CROSS_REFERENCE_KEY otherwise)
 * and is kept as its one association.
 * Differences from Salesforce: a locator can be read once and never expires; `totalSize` of an
 * endless query is what was paged so far.
 */
const MAX_RECORDS = 200;
const SOBJECTS = new Set(['Contact', 'Account', 'Task']);
const API_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
const VERSION = /^v\d+\.0$/;

type SaveResult = { id?: string; success: boolean; errors: { statusCode: string; message: string; fields: string[] }[]; created?: boolean };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function refused(statusCode: string, message: string, fields: string[] = []): SaveResult {
  return { success: false, errors: [{ statusCode, message, fields }] };
}

function findByField(state: FakeCrmState, sobject: string, field: string, value: unknown): FakeRecord | undefined {
  return [...state.store('salesforce', sobject).values()].find((r) => r.properties[field] === value);
}

/** Task.Who / Task.What given as `{ attributes: { type }, <externalIdField>: value }`, resolved to an id. */
function resolveReference(state: FakeCrmState, name: string, reference: unknown): { field: string; id: string } | SaveResult {
  const ref = isObject(reference) ? reference : {};
  const type = isObject(ref.attributes) ? ref.attributes.type : undefined;
  const entries = Object.entries(ref).filter(([k]) => k !== 'attributes');
  const [field, value] = entries[0] ?? [];
  if (typeof type !== 'string' || entries.length !== 1 || field === undefined) return refused('INVALID_FIELD', `Invalid foreign key reference ${name}`, [name]);
  const target = findByField(state, type, field, value);
  if (!target) return refused('INVALID_FIELD', `Foreign key external ID: ${String(value)} not found for field ${field} in entity ${type}`, [name]);
  return { field: `${name}Id`, id: target.id };
}

function save(state: FakeCrmState, sobject: string, externalIdField: string, record: Record<string, unknown>): SaveResult {
  const attributes = isObject(record.attributes) ? record.attributes : {};
  if (attributes.type !== sobject) return refused('INVALID_TYPE', `attributes.type must be ${sobject}`);
  const key = record[externalIdField];
  if (typeof key !== 'string' || key === '') return refused('MISSING_ARGUMENT', `${externalIdField} not specified`, [externalIdField]);
  const fields: Record<string, unknown> = {};
  const associations: string[] = [];
  for (const [name, value] of Object.entries(record)) {
    if (name === 'attributes') continue;
    if (!API_NAME.test(name)) return refused('INVALID_FIELD', `No such column '${name}' on entity '${sobject}'`, [name]);
    if (sobject === 'Task' && (name === 'Who' || name === 'What')) {
      const resolved = resolveReference(state, name, value);
      if ('success' in resolved) return resolved;
      fields[resolved.field] = resolved.id;
      associations.push(resolved.id);
    } else if (isObject(value) || Array.isArray(value)) {
      return refused('INVALID_FIELD', `Cannot deserialize value of field ${name}`, [name]);
    } else if (sobject === 'Contact' && name === 'AccountId' && value !== null) {
      // A lookup must name an existing record of its type.
      if (![...state.store('salesforce', 'Account').values()].some((a) => a.id === value)) {
        return refused('INVALID_CROSS_REFERENCE_KEY', `invalid cross reference id`, [name]);
      }
      fields[name] = value;
    } else fields[name] = value;
  }
  const store = state.store('salesforce', sobject);
  const existing = store.get(key);
  const stored = existing ?? { id: state.newId(), properties: {}, associations: [] };
  Object.assign(stored.properties, fields, { Id: stored.id });
  // A Contact has one Account (AccountId replaces it); a Task keeps what it names.
  stored.associations =
    sobject === 'Contact' && 'AccountId' in fields
      ? fields.AccountId === null
        ? []
        : [String(fields.AccountId)]
      : [...new Set([...stored.associations, ...associations])];
  store.set(key, stored);
  return { id: stored.id, success: true, errors: [], created: !existing };
}

let locators = 0;

/** One page of `records`: the rest is kept under a new locator, as Salesforce keeps a query cursor. */
function page(state: FakeCrmState, version: string, records: Record<string, unknown>[], totalSize: number): Record<string, unknown> {
  const { pageSize = 2000, endless = false, nextRecordsUrl } = state.salesforcePaging;
  const head = records.slice(0, pageSize);
  const rest = records.slice(pageSize);
  if (rest.length === 0 && !endless) return { totalSize, done: true, records: head };
  const locator = `01gFAKE${String(++locators).padStart(8, '0')}-${totalSize - rest.length}`;
  state.salesforceCursors.set(locator, rest);
  return { totalSize, done: false, nextRecordsUrl: nextRecordsUrl ?? `/services/data/${version}/query/${locator}`, records: head };
}

function badRequest(reply: FastifyReply, errorCode: string, message: string): FastifyReply {
  return reply.code(400).send(salesforceError(errorCode, message));
}

export function registerFakeSalesforce(app: FastifyInstance, state: FakeCrmState): void {
  app.patch<{ Params: { version: string; sobject: string; field: string } }>(
    '/services/data/:version/composite/sobjects/:sobject/:field',
    async (request, reply) => {
      const { version, sobject, field } = request.params;
      if (!VERSION.test(version)) return reply.code(404).send(salesforceError('NOT_FOUND', 'The requested resource does not exist'));
      if (!SOBJECTS.has(sobject)) return badRequest(reply, 'INVALID_TYPE', `sObject type '${sobject}' is not supported.`);
      if (!API_NAME.test(field)) return badRequest(reply, 'INVALID_FIELD', `Provided external ID field does not exist or is not accessible: ${field}`);
      const body = isObject(request.body) ? request.body : {};
      if (typeof body.allOrNone !== 'boolean' || !Array.isArray(body.records) || !body.records.every(isObject)) {
        return badRequest(reply, 'JSON_PARSER_ERROR', 'Expected { allOrNone: boolean, records: object[] }');
      }
      if (body.records.length > MAX_RECORDS) {
        return badRequest(reply, 'EXCEEDED_ID_LIMIT', `record limit reached. cannot submit more than ${MAX_RECORDS} records into this call`);
      }
      return (body.records as Record<string, unknown>[]).map((record) => save(state, sobject, field, record));
    },
  );

  app.get<{ Params: { version: string }; Querystring: { q?: string } }>('/services/data/:version/query', async (request, reply) => {
    const parsed = parseSoqlInQuery(request.query.q ?? '');
    if (typeof parsed === 'string') return badRequest(reply, 'MALFORMED_QUERY', parsed);
    if (!SOBJECTS.has(parsed.sobject)) return badRequest(reply, 'INVALID_TYPE', `sObject type '${parsed.sobject}' is not supported.`);
    const wanted = new Set(parsed.values);
    const records = [...state.store('salesforce', parsed.sobject).values()]
      .filter((r) => wanted.has(r.properties[parsed.whereField] as string))
      .map((r) => ({
        attributes: { type: parsed.sobject, url: `/services/data/${request.params.version}/sobjects/${parsed.sobject}/${r.id}` },
        ...Object.fromEntries(parsed.fields.map((f) => [f, f === 'Id' ? r.id : (r.properties[f] ?? null)])),
      }));
    return page(state, request.params.version, records, records.length);
  });

  // The rest of a query, by the locator a previous page named; an unknown locator is Salesforce's INVALID_QUERY_LOCATOR.
  app.get<{ Params: { version: string; locator: string } }>('/services/data/:version/query/:locator', async (request, reply) => {
    const rest = state.salesforceCursors.get(request.params.locator);
    if (!rest) return badRequest(reply, 'INVALID_QUERY_LOCATOR', 'invalid query locator');
    state.salesforceCursors.delete(request.params.locator);
    return page(state, request.params.version, rest, Number(request.params.locator.split('-')[1] ?? 0) + rest.length);
  });
}

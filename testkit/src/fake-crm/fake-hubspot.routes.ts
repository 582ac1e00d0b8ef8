import type { FastifyInstance, FastifyReply } from 'fastify';
import { type FakeCrmState, type FakeRecord, hubspotError } from './fake-crm.state.js';

/**
 * The HubSpot CRM v3 endpoints the adapter calls, with HubSpot's limits and error shapes:
 * batch upsert and read of contacts (by email) and companies (by domain), and batch create of
 * notes whose `ingest_activity_key` is a unique-value property (409 on a duplicate); and the
 * associations v4 batch create of default contact-to-company associations
 * (`POST /crm/v4/associations/contacts/companies/batch/associate/default`), kept on both records'
 * `associations` (one per pair, so repeating it changes nothing).
 * Differences from HubSpot: associations v4 takes only contacts to companies here; its batch limit
 * is 100 (HubSpot documents more); a pair naming an unknown record id is refused in a 207 with
 * `context.ids` (HubSpot's exact error body for that case is not documented); no association is
 * made primary (HubSpot may mark a contact's first company primary).
 */
const MAX_INPUTS = 100;
const OBJECTS: Record<string, { idProperty: string; label: string }> = {
  contacts: { idProperty: 'email', label: 'CONTACT' },
  companies: { idProperty: 'domain', label: 'COMPANY' },
};
const ASSOCIATION_TARGETS: Record<number, string> = { 202: 'contacts', 190: 'companies' };
export const FAKE_HUBSPOT_UNIQUE_NOTE_PROPERTY = 'ingest_activity_key';

type Input = { id?: unknown; idProperty?: unknown; properties?: unknown; associations?: unknown };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(reply: FastifyReply, message: string): FastifyReply {
  return reply.code(400).send(hubspotError('VALIDATION_ERROR', message));
}

/** The batch `inputs`, or an answer already sent for a malformed or oversized batch. */
function inputsOf(body: unknown, reply: FastifyReply): Input[] | undefined {
  const inputs = isObject(body) ? body.inputs : undefined;
  if (!Array.isArray(inputs) || !inputs.every(isObject)) {
    void invalid(reply, 'Invalid input JSON: `inputs` must be an array of objects');
    return undefined;
  }
  if (inputs.length > MAX_INPUTS) {
    void invalid(reply, `Batch input limit exceeded: ${inputs.length} inputs, the limit is ${MAX_INPUTS}`);
    return undefined;
  }
  return inputs as Input[];
}

function stringProperties(value: unknown): Record<string, string> | undefined {
  if (!isObject(value) || !Object.values(value).every((v) => typeof v === 'string')) return undefined;
  return value as Record<string, string>;
}

function view(record: FakeRecord, properties?: readonly string[]): Record<string, unknown> {
  const props = properties ? Object.fromEntries(properties.map((p) => [p, record.properties[p] ?? null])) : record.properties;
  return { id: record.id, properties: { ...props, hs_object_id: record.id }, archived: false };
}

/** HubSpot's object type ids in association answers. */
const OBJECT_TYPE_IDS: Record<string, string> = { contacts: '0-1', companies: '0-2' };
/** HubSpot-defined contact-to-company association type (unlabeled). */
const CONTACT_TO_COMPANY = 279;

function findById(state: FakeCrmState, type: string, id: unknown): FakeRecord | undefined {
  return [...state.store('hubspot', type).values()].find((r) => r.id === id);
}

export function registerFakeHubSpot(app: FastifyInstance, state: FakeCrmState): void {
  app.post<{ Params: { from: string; to: string } }>('/crm/v4/associations/:from/:to/batch/associate/default', async (request, reply) => {
    const { from, to } = request.params;
    if (from !== 'contacts' || to !== 'companies') return invalid(reply, `The fake CRM associates only contacts to companies, not ${from} to ${to}`);
    const inputs = inputsOf(request.body, reply);
    if (!inputs) return reply;
    const pairs = inputs as { from?: { id?: unknown }; to?: { id?: unknown } }[];
    if (!pairs.every((p) => typeof p.from?.id === 'string' && typeof p.to?.id === 'string')) {
      return invalid(reply, 'Invalid input JSON: every input needs `from.id` and `to.id`');
    }
    const results: Record<string, unknown>[] = [];
    const unknown: string[] = [];
    for (const pair of pairs) {
      const contact = findById(state, 'contacts', pair.from?.id);
      const company = findById(state, 'companies', pair.to?.id);
      if (!contact || !company) {
        unknown.push(String(contact ? pair.to?.id : pair.from?.id));
        continue;
      }
      contact.associations = [...new Set([...contact.associations, company.id])];
      company.associations = [...new Set([...company.associations, contact.id])];
      results.push({
        associationSpec: { associationCategory: 'HUBSPOT_DEFINED', associationTypeId: CONTACT_TO_COMPANY },
        from: { id: contact.id },
        to: { id: company.id },
        fromObjectTypeId: OBJECT_TYPE_IDS[from],
        toObjectTypeId: OBJECT_TYPE_IDS[to],
      });
    }
    if (unknown.length === 0) return { status: 'COMPLETE', results };
    const error = { status: 'error', category: 'VALIDATION_ERROR', message: `No object exists with the ids ${unknown.join(', ')}`, context: { ids: unknown } };
    return reply.code(207).send({ status: 'COMPLETE', results, errors: [error], numErrors: 1 });
  });

  /** Notes by their unique key property, as HubSpot reads any object by a unique-value property. */
  function readNotes(body: unknown, reply: FastifyReply): FastifyReply {
    const inputs = inputsOf(body, reply);
    if (!inputs) return reply;
    const { idProperty, properties } = body as { idProperty?: unknown; properties?: unknown };
    if (idProperty !== FAKE_HUBSPOT_UNIQUE_NOTE_PROPERTY) return invalid(reply, `The fake CRM reads notes only by ${FAKE_HUBSPOT_UNIQUE_NOTE_PROPERTY}`);
    const notes = state.store('hubspot', 'notes');
    const fields = Array.isArray(properties) ? properties.map(String) : [];
    const results: Record<string, unknown>[] = [];
    const missing: string[] = [];
    for (const input of inputs) {
      const note = typeof input.id === 'string' ? notes.get(input.id) : undefined;
      if (note) results.push(view(note, fields));
      else missing.push(String(input.id));
    }
    if (missing.length === 0) return reply.send({ status: 'COMPLETE', results });
    const message = 'Could not get some NOTE objects, they may be deleted or not exist. Check that ids are valid.';
    return reply
      .code(207)
      .send({ status: 'COMPLETE', results, errors: [{ status: 'error', category: 'OBJECT_NOT_FOUND', message, context: { ids: missing } }], numErrors: 1 });
  }

  app.post<{ Params: { type: string } }>('/crm/v3/objects/:type/batch/upsert', async (request, reply) => {
    const object = OBJECTS[request.params.type];
    if (!object) return invalid(reply, `Unable to infer object type from: ${request.params.type}`);
    const inputs = inputsOf(request.body, reply);
    if (!inputs) return reply;
    const seen = new Set<string>();
    for (const input of inputs) {
      if (typeof input.id !== 'string' || input.id === '') return invalid(reply, 'Invalid input JSON: every input needs an `id`');
      if (input.idProperty !== object.idProperty) return invalid(reply, `idProperty must be the unique property ${object.idProperty}`);
      if (!stringProperties(input.properties)) return invalid(reply, 'Invalid input JSON: property values must be strings');
      if (seen.has(input.id.toLowerCase())) return invalid(reply, 'Duplicate IDs found in batch input');
      seen.add(input.id.toLowerCase());
    }
    const store = state.store('hubspot', request.params.type);
    const results: Record<string, unknown>[] = [];
    const errors: Record<string, unknown>[] = [];
    for (const input of inputs) {
      const id = (input.id as string).toLowerCase();
      if (object.idProperty === 'email' && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(id)) {
        errors.push({ status: 'error', category: 'VALIDATION_ERROR', message: `Email address ${id} is invalid`, context: { ids: [input.id] } });
        continue;
      }
      const existing = store.get(id);
      const record = existing ?? { id: state.newId(), properties: { [object.idProperty]: id }, associations: [] };
      Object.assign(record.properties, stringProperties(input.properties));
      store.set(id, record);
      results.push({ ...view(record), new: !existing });
    }
    return reply.code(errors.length > 0 ? 207 : 200).send({ status: 'COMPLETE', results, ...(errors.length > 0 ? { errors, numErrors: errors.length } : {}) });
  });

  app.post<{ Params: { type: string } }>('/crm/v3/objects/:type/batch/read', async (request, reply) => {
    if (request.params.type === 'notes') return readNotes(request.body, reply);
    const object = OBJECTS[request.params.type];
    if (!object) return invalid(reply, `Unable to infer object type from: ${request.params.type}`);
    const inputs = inputsOf(request.body, reply);
    if (!inputs) return reply;
    const body = request.body as { idProperty?: unknown; properties?: unknown };
    if (body.idProperty !== object.idProperty) return invalid(reply, `idProperty must be the unique property ${object.idProperty}`);
    const properties = Array.isArray(body.properties) ? body.properties.map(String) : [];
    const store = state.store('hubspot', request.params.type);
    const results: Record<string, unknown>[] = [];
    const missing: string[] = [];
    for (const input of inputs) {
      const record = typeof input.id === 'string' ? store.get(input.id.toLowerCase()) : undefined;
      if (record) results.push(view(record, properties));
      else missing.push(String(input.id));
    }
    if (missing.length === 0) return { status: 'COMPLETE', results };
    const message = `Could not get some ${object.label} objects, they may be deleted or not exist. Check that ids are valid.`;
    return reply
      .code(207)
      .send({ status: 'COMPLETE', results, errors: [{ status: 'error', category: 'OBJECT_NOT_FOUND', message, context: { ids: missing } }], numErrors: 1 });
  });

  app.post<{ Params: { type: string } }>('/crm/v3/objects/:type/batch/create', async (request, reply) => {
    if (request.params.type !== 'notes') return invalid(reply, `The fake CRM creates only notes, not ${request.params.type}`);
    const inputs = inputsOf(request.body, reply);
    if (!inputs) return reply;
    const notes = state.store('hubspot', 'notes');
    const keys = new Set<string>();
    for (const input of inputs) {
      const properties = stringProperties(input.properties);
      if (!properties?.hs_timestamp) return invalid(reply, 'Property values were not valid: hs_timestamp is required');
      const key = properties[FAKE_HUBSPOT_UNIQUE_NOTE_PROPERTY];
      if (key !== undefined && (notes.has(key) || keys.has(key))) {
        const message = `Object already has a value for unique property ${FAKE_HUBSPOT_UNIQUE_NOTE_PROPERTY}: ${key}`;
        return reply.code(409).send(hubspotError('CONFLICT', message));
      }
      if (key !== undefined) keys.add(key);
      for (const association of Array.isArray(input.associations) ? (input.associations as unknown[]) : []) {
        const a = association as { to?: { id?: unknown }; types?: { associationTypeId?: unknown }[] };
        const target = ASSOCIATION_TARGETS[Number(a.types?.[0]?.associationTypeId)];
        const known = target !== undefined && [...state.store('hubspot', target).values()].some((r) => r.id === a.to?.id);
        if (!known) return invalid(reply, `Invalid association: no ${target ?? 'object'} with id ${String(a.to?.id)}`);
      }
    }
    const results = inputs.map((input) => {
      const properties = stringProperties(input.properties) ?? {};
      const associations = (input.associations as { to: { id: string } }[] | undefined)?.map((a) => a.to.id) ?? [];
      const note: FakeRecord = { id: state.newId(), properties, associations };
      notes.set(properties[FAKE_HUBSPOT_UNIQUE_NOTE_PROPERTY] ?? note.id, note);
      return view(note);
    });
    return reply.code(201).send({ status: 'COMPLETE', results });
  });
}

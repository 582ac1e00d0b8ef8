import type { CrmCredential } from '@ingest/domain';
import type {
  ActivityWrite,
  ContactCompanyLink,
  CrmBatchResult,
  CrmAdapter,
  CrmLinkResult,
  CrmObject,
  PropertyValue,
  CrmRecordFailure,
  RecordWrite,
} from './adapter.js';
import type { CrmErrorDetail } from './crm-errors.js';
import { type AdapterHttpOptions, type CrmHttpClient, type CrmRequest, assertBatchSize, createCrmHttpClient, unexpectedResponse } from './http.client.js';
import {
  HUBSPOT_ACTIVITY_KEY_PROPERTY,
  HUBSPOT_DEFAULT_BASE_URL,
  HUBSPOT_MAX_BATCH_SIZE,
  HUBSPOT_OBJECTS,
  buildHubSpotAssociateRequests,
  buildHubSpotLinkIdRequests,
  buildHubSpotNoteKeyReadRequest,
  buildHubSpotNoteRequests,
  buildHubSpotReadRequests,
  buildHubSpotRecordIdRequests,
  buildHubSpotUpsertRequests,
  hubspotRecordRef,
  uniqueActivities,
} from '@ingest/domain';

const CRM = 'HubSpot';
/** HubSpot's burst limit is per 10 s window; without a Retry-After, waiting out one window is enough. */
const HUBSPOT_DEFAULT_RETRY_AFTER_MS = 10_000;

interface HubSpotBatchResponse {
  results?: { id?: string; properties?: Record<string, string | null> }[];
  errors?: { message?: string; category?: string; context?: Record<string, unknown> }[];
}

export function describeHubSpotError(_status: number, body: unknown): CrmErrorDetail {
  if (typeof body !== 'object' || body === null) return { message: typeof body === 'string' ? body : undefined };
  const { message, category } = body as { message?: unknown; category?: unknown };
  const text = typeof message === 'string' ? message : undefined;
  return { message: typeof category === 'string' && text ? `${category}: ${text}` : text };
}

function asBatchResponse(body: unknown): HubSpotBatchResponse {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw unexpectedResponse(CRM, 'batch response', []);
  return body as HubSpotBatchResponse;
}

function contextIds(context: Record<string, unknown> | undefined): string[] {
  const ids = context?.ids ?? context?.id;
  return Array.isArray(ids) ? ids.map(String) : typeof ids === 'string' ? [ids] : [];
}

/**
 * Per-record failures of a 200/207 batch answer. Errors name their records in `context.ids`
 * when HubSpot can tell; an error it cannot place fails every requested record missing from
 * `results`, so no record is reported written that HubSpot did not confirm.
 */
export function hubspotBatchFailures(keys: readonly string[], idProperty: string, response: HubSpotBatchResponse): CrmRecordFailure[] {
  const byLower = new Map(keys.map((k) => [k.toLowerCase(), k]));
  const failures = new Map<string, string>();
  const unplaced: string[] = [];
  for (const error of response.errors ?? []) {
    const message = error.category && error.message ? `${error.category}: ${error.message}` : (error.message ?? 'record refused');
    const placed = contextIds(error.context)
      .map((id) => byLower.get(id.toLowerCase()))
      .filter((k) => k !== undefined);
    for (const key of placed) failures.set(key, message);
    if (placed.length === 0) unplaced.push(message);
  }
  if (unplaced.length > 0) {
    const written = new Set((response.results ?? []).map((r) => r.properties?.[idProperty]?.toLowerCase()));
    for (const key of keys) if (!written.has(key.toLowerCase()) && !failures.has(key)) failures.set(key, unplaced.join('; '));
  }
  return [...failures].map(([key, message]) => ({ key, message }));
}

export function createHubSpotAdapter(
  credential: Extract<CrmCredential, { type: 'hubspot' }>,
  httpOptions: AdapterHttpOptions = {},
): CrmAdapter & { close(): Promise<void> } {
  const http: CrmHttpClient = createCrmHttpClient({
    ...httpOptions,
    crm: CRM,
    baseUrl: credential.baseUrl ?? HUBSPOT_DEFAULT_BASE_URL,
    headers: { authorization: `Bearer ${credential.accessToken}` },
    secrets: [credential.accessToken],
    describeError: describeHubSpotError,
    defaultRetryAfterMs: HUBSPOT_DEFAULT_RETRY_AFTER_MS,
  });

  async function upsertBatch(
    request: CrmRequest,
    object: CrmObject,
    signal?: AbortSignal,
  ): Promise<{ failures: CrmRecordFailure[]; ids: Map<string, string> }> {
    const { idProperty } = HUBSPOT_OBJECTS[object];
    const keys = ((request.body as { inputs: { id: string }[] }).inputs ?? []).map((i) => i.id);
    const response = asBatchResponse((await http.send(request, { signal })).body);
    const ids = new Map<string, string>();
    for (const r of response.results ?? []) {
      const key = r.properties?.[idProperty];
      if (key && r.id) ids.set(`${object}:${key.toLowerCase()}`, r.id);
    }
    return { failures: hubspotBatchFailures(keys, idProperty, response), ids };
  }

  async function upsert(object: CrmObject, records: RecordWrite[], signal?: AbortSignal): Promise<CrmBatchResult> {
    assertBatchSize(CRM, records.length, HUBSPOT_MAX_BATCH_SIZE);
    const failures: CrmRecordFailure[] = [];
    for (const request of buildHubSpotUpsertRequests(object, records)) failures.push(...(await upsertBatch(request, object, signal)).failures);
    return { failures };
  }

  async function read(object: CrmObject, keys: string[], fields: string[], signal?: AbortSignal): Promise<Map<string, Record<string, PropertyValue>>> {
    const { idProperty } = HUBSPOT_OBJECTS[object];
    const byLower = new Map(keys.map((k) => [k.toLowerCase(), k]));
    const found = new Map<string, Record<string, PropertyValue>>();
    for (const request of buildHubSpotReadRequests(object, keys, fields)) {
      // Keys HubSpot does not know come back as OBJECT_NOT_FOUND errors in a 207: simply absent.
      const response = asBatchResponse((await http.send(request, { signal })).body);
      for (const r of response.results ?? []) {
        const key = byLower.get(r.properties?.[idProperty]?.toLowerCase() ?? '');
        if (key === undefined) continue;
        found.set(key, Object.fromEntries(fields.map((f) => [f, r.properties?.[f] ?? null])));
      }
    }
    return found;
  }

  /**
   * HubSpot refuses a whole batch create with 409 when one note's key exists (a flush redone after
   * a crash, a replay). The batch's keys are then read and only the missing notes created: three
   * requests, where one request per note (up to 102) overran HubSpot's 100 requests per 10 s, got
   * a 429 and started over on every retry. Only a second 409 (another replica created one in
   * between) falls back to one request per remaining note, where a 409 means already applied.
   */
  async function createNotes(request: CrmRequest, signal?: AbortSignal): Promise<void> {
    const first = await http.send(request, { accept: [409], signal });
    if (first.status !== 409) return;
    const inputs = (request.body as { inputs: { properties: Record<string, string> }[] }).inputs;
    const keyOf = (input: { properties: Record<string, string> }) => input.properties[HUBSPOT_ACTIVITY_KEY_PROPERTY] ?? '';
    const existing = asBatchResponse((await http.send(buildHubSpotNoteKeyReadRequest(inputs.map(keyOf)), { signal })).body);
    const found = new Set((existing.results ?? []).map((r) => r.properties?.[HUBSPOT_ACTIVITY_KEY_PROPERTY]));
    const missing = inputs.filter((input) => !found.has(keyOf(input)));
    if (missing.length === 0) return;
    const second = await http.send({ ...request, body: { inputs: missing } }, { accept: [409], signal });
    if (second.status !== 409) return;
    for (const input of missing) await http.send({ ...request, body: { inputs: [input] } }, { accept: [409], signal });
  }

  async function createActivities(activities: ActivityWrite[], signal?: AbortSignal): Promise<CrmBatchResult> {
    assertBatchSize(CRM, activities.length, HUBSPOT_MAX_BATCH_SIZE);
    const unique = uniqueActivities(activities);
    const recordIds = new Map<string, string>();
    const recordFailures = new Map<string, string>();
    for (const request of buildHubSpotRecordIdRequests(unique)) {
      const object: CrmObject = request.path.includes('/contacts/') ? 'contact' : 'company';
      const result = await upsertBatch(request, object, signal);
      for (const [k, id] of result.ids) recordIds.set(k, id);
      for (const f of result.failures) recordFailures.set(`${object}:${f.key.toLowerCase()}`, f.message);
    }
    const failures: CrmRecordFailure[] = [];
    const ready: ActivityWrite[] = [];
    for (const a of unique) {
      const ref = `${a.object}:${a.key.toLowerCase()}`;
      const id = recordIds.get(ref);
      if (id !== undefined) {
        recordIds.set(`${a.object}:${a.key}`, id);
        ready.push(a);
      } else failures.push({ key: a.idempotencyKey, message: recordFailures.get(ref) ?? `HubSpot returned no id for ${a.object} ${a.key}` });
    }
    for (const request of buildHubSpotNoteRequests(ready, recordIds)) await createNotes(request, signal);
    return { failures };
  }

  /**
   * Reads both records' ids (contacts by email, companies by domain; nothing is created), then
   * creates the default association of each pair found. HubSpot keeps one association per pair, so
   * a retried or repeated link changes nothing. Pairs HubSpot does not confirm in `results` fail.
   */
  async function link(links: ContactCompanyLink[], signal?: AbortSignal): Promise<CrmLinkResult> {
    assertBatchSize(CRM, links.length, HUBSPOT_MAX_BATCH_SIZE);
    const ids = new Map<string, string>();
    for (const request of buildHubSpotLinkIdRequests(links)) {
      const object: CrmObject = request.path.includes('/contacts/') ? 'contact' : 'company';
      const { idProperty } = HUBSPOT_OBJECTS[object];
      // Keys HubSpot does not know come back as OBJECT_NOT_FOUND errors in a 207: simply absent.
      const response = asBatchResponse((await http.send(request, { signal })).body);
      for (const r of response.results ?? []) {
        const key = r.properties?.[idProperty];
        if (key && r.id) ids.set(hubspotRecordRef(object, key), r.id);
      }
    }
    const found = (l: ContactCompanyLink) => ids.has(hubspotRecordRef('contact', l.email)) && ids.has(hubspotRecordRef('company', l.domain));
    const ready = links.filter(found);
    const failures: CrmRecordFailure[] = [];
    for (const request of buildHubSpotAssociateRequests(ready, ids)) {
      const inputs = (request.body as { inputs: { from: { id: string } }[] }).inputs;
      const response = asBatchResponse((await http.send(request, { signal })).body);
      // Association results name their pair as `from`/`to`, not as a record.
      const results = (response.results ?? []) as { from?: { id?: unknown } }[];
      const confirmed = new Set(results.map((r) => String(r.from?.id)));
      const message = (response.errors ?? []).map((e) => (e.category && e.message ? `${e.category}: ${e.message}` : (e.message ?? ''))).join('; ');
      for (const l of ready) {
        const contactId = ids.get(hubspotRecordRef('contact', l.email)) as string;
        if (inputs.some((i) => i.from.id === contactId) && !confirmed.has(contactId))
          failures.push({ key: l.email, message: message || 'association not confirmed' });
      }
    }
    return { failures, missing: links.filter((l) => ids.has(hubspotRecordRef('contact', l.email)) && !ids.has(hubspotRecordRef('company', l.domain))) };
  }

  return { type: 'hubspot', maxBatchSize: HUBSPOT_MAX_BATCH_SIZE, read, upsert, createActivities, link, close: () => http.close() };
}

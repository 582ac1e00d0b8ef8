import type { ContactCompanyLink } from './crm-links.js';
import { type ActivityWrite, type CrmObject, type CrmRequest, type PropertyValue, type RecordWrite, chunk } from './crm-writes.js';

/**
 * Pure builders of the HubSpot CRM v3 calls. The adapter sends exactly these, and a dry-run
 * shows them, so what a dry-run prints is what the sink does.
 */
export const HUBSPOT_DEFAULT_BASE_URL = 'https://api.hubapi.com';
export const HUBSPOT_MAX_BATCH_SIZE = 100;
/** A custom note property with "unique value" set: HubSpot answers 409 to a second note with the same key. */
export const HUBSPOT_ACTIVITY_KEY_PROPERTY = 'ingest_activity_key';

export const HUBSPOT_OBJECTS: Readonly<Record<CrmObject, { type: 'contacts' | 'companies'; idProperty: 'email' | 'domain'; noteAssociationTypeId: number }>> = {
  // HubSpot-defined association types note -> contact (202) and note -> company (190).
  contact: { type: 'contacts', idProperty: 'email', noteAssociationTypeId: 202 },
  company: { type: 'companies', idProperty: 'domain', noteAssociationTypeId: 190 },
};

/** HubSpot stores every property value as a string; an empty string clears a property. */
export function hubspotValue(value: PropertyValue): string {
  return value === null ? '' : String(value);
}

export interface HubSpotUpsertInput {
  id: string;
  idProperty: string;
  properties: Record<string, string>;
}

/**
 * The request bodies as sent. `hubspot.requests.types-check.ts` holds each to the matching input
 * model of HubSpot's own SDK (`@hubspot/api-client`, a devDependency used for types only), so a
 * builder that drifts from HubSpot's API fails `tsc`.
 */
export interface HubSpotBatchUpsertBody {
  inputs: HubSpotUpsertInput[];
}
export interface HubSpotBatchReadBody {
  idProperty: string;
  properties: string[];
  inputs: { id: string }[];
}
export interface HubSpotNoteCreateBody {
  inputs: {
    properties: Record<string, string>;
    associations: { to: { id: string }; types: { associationCategory: 'HUBSPOT_DEFINED'; associationTypeId: number }[] }[];
  }[];
}
export interface HubSpotAssociateBody {
  inputs: { from: { id: string }; to: { id: string } }[];
}

/** Records with the same key are merged (later values win): HubSpot refuses duplicate ids in one batch. */
function mergeByKey(records: readonly RecordWrite[]): Map<string, Record<string, PropertyValue>> {
  const merged = new Map<string, Record<string, PropertyValue>>();
  for (const r of records) merged.set(r.key, { ...merged.get(r.key), ...r.properties });
  return merged;
}

export function buildHubSpotUpsertRequests(object: CrmObject, records: readonly RecordWrite[]): CrmRequest[] {
  const { type, idProperty } = HUBSPOT_OBJECTS[object];
  const inputs: HubSpotUpsertInput[] = [...mergeByKey(records)].map(([key, properties]) => ({
    id: key,
    idProperty,
    properties: Object.fromEntries(Object.entries(properties).map(([name, value]) => [name, hubspotValue(value)])),
  }));
  return chunk(inputs, HUBSPOT_MAX_BATCH_SIZE).map((batch) => ({
    method: 'POST',
    path: `/crm/v3/objects/${type}/batch/upsert`,
    body: { inputs: batch } satisfies HubSpotBatchUpsertBody,
  }));
}

export function buildHubSpotReadRequests(object: CrmObject, keys: readonly string[], fields: readonly string[]): CrmRequest[] {
  const { type, idProperty } = HUBSPOT_OBJECTS[object];
  const properties = [...new Set([idProperty, ...fields])];
  return chunk([...new Set(keys)], HUBSPOT_MAX_BATCH_SIZE).map((batch) => ({
    method: 'POST',
    path: `/crm/v3/objects/${type}/batch/read`,
    body: { idProperty, properties, inputs: batch.map((id) => ({ id })) } satisfies HubSpotBatchReadBody,
  }));
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A second activity with the same key in one batch would make HubSpot refuse the whole batch (409). */
export function uniqueActivities(activities: readonly ActivityWrite[]): ActivityWrite[] {
  return [...new Map(activities.map((a) => [a.idempotencyKey, a])).values()];
}

/**
 * Record ids for note associations come from upserting the records by key with no other properties:
 * it creates a record the activity is about if it does not exist yet, and changes nothing else.
 */
export function buildHubSpotRecordIdRequests(activities: readonly ActivityWrite[]): CrmRequest[] {
  return (['contact', 'company'] as const).flatMap((object) =>
    buildHubSpotUpsertRequests(
      object,
      // The key itself as the only property: the answer then names each record's key next to its id.
      activities.filter((a) => a.object === object).map((a) => ({ object, key: a.key, properties: { [HUBSPOT_OBJECTS[object].idProperty]: a.key } })),
    ),
  );
}

export function recordIdPlaceholder(object: CrmObject, key: string): string {
  return `<id of ${object} ${key}>`;
}

/** `recordIds` maps `${object}:${key}` to HubSpot's record id; a dry-run passes none and shows placeholders. */
export function buildHubSpotNoteRequests(activities: readonly ActivityWrite[], recordIds: ReadonlyMap<string, string> = new Map()): CrmRequest[] {
  const inputs: HubSpotNoteCreateBody['inputs'] = uniqueActivities(activities).map((a) => ({
    properties: {
      hs_timestamp: a.occurredAt,
      hs_note_body: `<strong>${escapeHtml(a.type)}</strong>: ${escapeHtml(a.title)}`,
      [HUBSPOT_ACTIVITY_KEY_PROPERTY]: a.idempotencyKey,
    },
    associations: [
      {
        to: { id: recordIds.get(`${a.object}:${a.key}`) ?? recordIdPlaceholder(a.object, a.key) },
        types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: HUBSPOT_OBJECTS[a.object].noteAssociationTypeId }],
      },
    ],
  }));
  return chunk(inputs, HUBSPOT_MAX_BATCH_SIZE).map((batch) => ({
    method: 'POST',
    path: '/crm/v3/objects/notes/batch/create',
    body: { inputs: batch } satisfies HubSpotNoteCreateBody,
  }));
}

/** Which of these notes exist: a batch read by the unique key property (not search, which lags behind writes). */
export function buildHubSpotNoteKeyReadRequest(idempotencyKeys: readonly string[]): CrmRequest {
  return {
    method: 'POST',
    path: '/crm/v3/objects/notes/batch/read',
    body: {
      idProperty: HUBSPOT_ACTIVITY_KEY_PROPERTY,
      properties: [HUBSPOT_ACTIVITY_KEY_PROPERTY],
      inputs: idempotencyKeys.map((id) => ({ id })),
    } satisfies HubSpotBatchReadBody,
  };
}

/** Every call `createActivities` makes, in order (dry-run). */
export function buildHubSpotActivityRequests(activities: readonly ActivityWrite[]): CrmRequest[] {
  return [...buildHubSpotRecordIdRequests(activities), ...buildHubSpotNoteRequests(activities)];
}

/** HubSpot associations v4: the default (unlabeled) contact-to-company association, created in batches; repeating one changes nothing. */
export const HUBSPOT_CONTACT_COMPANY_ASSOCIATE_PATH = '/crm/v4/associations/contacts/companies/batch/associate/default';

/** `recordIds` keys for link lookups: `${object}:${lowercased key}` (HubSpot keeps emails and domains in lower case). */
export function hubspotRecordRef(object: CrmObject, key: string): string {
  return `${object}:${key.toLowerCase()}`;
}

/** The ids a link needs: contacts by email and companies by domain, read (never created: a missing one is linked later). */
export function buildHubSpotLinkIdRequests(links: readonly ContactCompanyLink[]): CrmRequest[] {
  return [
    ...buildHubSpotReadRequests(
      'contact',
      links.map((l) => l.email),
      [],
    ),
    ...buildHubSpotReadRequests(
      'company',
      links.map((l) => l.domain),
      [],
    ),
  ];
}

/** `recordIds` as `hubspotRecordRef` names them; a dry-run passes none and shows placeholders. */
export function buildHubSpotAssociateRequests(links: readonly ContactCompanyLink[], recordIds: ReadonlyMap<string, string> = new Map()): CrmRequest[] {
  const inputs: HubSpotAssociateBody['inputs'] = links.map((l) => ({
    from: { id: recordIds.get(hubspotRecordRef('contact', l.email)) ?? recordIdPlaceholder('contact', l.email) },
    to: { id: recordIds.get(hubspotRecordRef('company', l.domain)) ?? recordIdPlaceholder('company', l.domain) },
  }));
  return chunk(inputs, HUBSPOT_MAX_BATCH_SIZE).map((batch) => ({
    method: 'POST',
    path: HUBSPOT_CONTACT_COMPANY_ASSOCIATE_PATH,
    body: { inputs: batch } satisfies HubSpotAssociateBody,
  }));
}

/** Every call `link` makes when both records exist, in order (dry-run). */
export function buildHubSpotLinkRequests(links: readonly ContactCompanyLink[]): CrmRequest[] {
  return [...buildHubSpotLinkIdRequests(links), ...buildHubSpotAssociateRequests(links)];
}

import type { CrmProperty, CrmPropertyList } from '@ingest/schemas';
import type { CrmCredential } from '../control-plane/types.js';
import type { CrmObject, CrmRequest } from './crm-writes.js';
import { HUBSPOT_OBJECTS } from './hubspot.requests.js';
import { salesforceTarget } from './salesforce.requests.js';

/**
 * A CRM object's properties in one shape for every CRM (`CrmPropertyList`, version 1), so a
 * mapping check can ask "does this field exist, is it writable, which values may it take"
 * without knowing which CRM answered. The builders name the calls (HubSpot properties API,
 * Salesforce describe); the normalisers read the CRMs' documented answers and keep at most
 * `PROPERTY_LIST_BOUNDS`, so a CRM with an absurd schema cannot grow what is cached or shown.
 */
export type { CrmProperty, CrmPropertyList } from '@ingest/schemas';

export const PROPERTY_LIST_VERSION = 1;
export const PROPERTY_LIST_BOUNDS = { properties: 2_000, optionsPerProperty: 500, textLength: 200 } as const;

const SALESFORCE_SOBJECT: Readonly<Record<CrmObject, string>> = { contact: 'Contact', company: 'Account' };

/** The one harmless authenticated read per CRM that "test connection" makes. */
export function buildConnectionTestRequest(credential: CrmCredential): CrmRequest | undefined {
  switch (credential.type) {
    // Account details: any private-app token may read them, and they hold no customer data.
    case 'hubspot':
      return { method: 'GET', path: '/account-info/v3/details' };
    // The org's limits: readable with any API-enabled session, and they say how much API budget is left.
    case 'salesforce':
      return { method: 'GET', path: `/services/data/v${salesforceTarget(credential).apiVersion}/limits` };
    // A signed delivery, built by the webhook check itself (it signs the exact bytes).
    case 'webhook':
      return undefined;
  }
}

export function buildPropertiesRequest(credential: CrmCredential, object: CrmObject): CrmRequest | undefined {
  switch (credential.type) {
    case 'hubspot':
      return { method: 'GET', path: `/crm/v3/properties/${HUBSPOT_OBJECTS[object].type}?archived=false` };
    case 'salesforce':
      return { method: 'GET', path: `/services/data/v${salesforceTarget(credential).apiVersion}/sobjects/${SALESFORCE_SOBJECT[object]}/describe` };
    // A webhook receiver has no schema to ask.
    case 'webhook':
      return undefined;
  }
}

/** The body a webhook receiver gets for "test connection": recognisable by its type, never stored as records. */
export function connectionTestPayload(sentAt: string): { type: 'connection.test'; sentAt: string } {
  return { type: 'connection.test', sentAt };
}

type Unknown = Record<string, unknown>;
const isObject = (v: unknown): v is Unknown => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string => (typeof v === 'string' ? v.slice(0, PROPERTY_LIST_BOUNDS.textLength) : '');

function options(raw: unknown, read: (o: Unknown) => { value: unknown; label: unknown; active: boolean }): { list?: CrmProperty['options']; cut: boolean } {
  if (!Array.isArray(raw) || raw.length === 0) return { cut: false };
  const active = raw
    .filter(isObject)
    .map(read)
    .filter((o) => o.active && typeof o.value === 'string');
  const kept = active.slice(0, PROPERTY_LIST_BOUNDS.optionsPerProperty).map((o) => ({ value: text(o.value), label: text(o.label) || text(o.value) }));
  return { list: kept, cut: active.length > kept.length };
}

function bounded(crm: CrmPropertyList['crm'], object: CrmObject, all: { property: CrmProperty; cut: boolean }[]): CrmPropertyList {
  const kept = all.slice(0, PROPERTY_LIST_BOUNDS.properties);
  const truncated = all.length > kept.length || kept.some((p) => p.cut);
  return { v: PROPERTY_LIST_VERSION, crm, object, properties: kept.map((p) => p.property), ...(truncated ? { truncated: true } : {}) };
}

/** `GET /crm/v3/properties/{objectType}`: `{ results: [{ name, label, type, options, modificationMetadata }] }`. */
export function normaliseHubSpotProperties(object: CrmObject, body: unknown): CrmPropertyList | undefined {
  if (!isObject(body) || !Array.isArray(body.results)) return undefined;
  const all = body.results.filter(isObject).flatMap((p) => {
    if (typeof p.name !== 'string' || p.hidden === true) return [];
    const metadata = isObject(p.modificationMetadata) ? p.modificationMetadata : {};
    const opts = options(p.options, (o) => ({ value: o.value, label: o.label, active: o.hidden !== true }));
    const property: CrmProperty = {
      name: text(p.name),
      label: text(p.label) || text(p.name),
      type: text(p.type),
      readOnly: metadata.readOnlyValue === true || p.calculated === true,
      ...(opts.list ? { options: opts.list } : {}),
    };
    return [{ property, cut: opts.cut }];
  });
  return bounded('hubspot', object, all);
}

/** `GET …/sobjects/{Object}/describe`: `{ fields: [{ name, label, type, updateable, createable, calculated, picklistValues }] }`. */
export function normaliseSalesforceDescribe(object: CrmObject, body: unknown): CrmPropertyList | undefined {
  if (!isObject(body) || !Array.isArray(body.fields)) return undefined;
  const all = body.fields.filter(isObject).flatMap((f) => {
    if (typeof f.name !== 'string') return [];
    const opts = options(f.picklistValues, (o) => ({ value: o.value, label: o.label, active: o.active !== false }));
    const property: CrmProperty = {
      name: text(f.name),
      label: text(f.label) || text(f.name),
      type: text(f.type),
      // The sink upserts: a field it can neither create nor update with is read-only to it.
      readOnly: f.calculated === true || (f.updateable !== true && f.createable !== true),
      ...(opts.list ? { options: opts.list } : {}),
    };
    return [{ property, cut: opts.cut }];
  });
  return bounded('salesforce', object, all);
}

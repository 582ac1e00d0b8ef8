import type { CrmCredential } from '../control-plane/types.js';
import type { ContactCompanyLink } from './crm-links.js';
import { recordIdPlaceholder } from './hubspot.requests.js';
import { type ActivityWrite, CrmError, type CrmObject, type CrmRequest, type RecordWrite, chunk } from './crm-writes.js';

/**
 * Pure builders of the Salesforce REST calls (sObject Collections upsert, SOQL query). The
 * adapter sends exactly these and a dry-run shows them.
 */
export const SALESFORCE_MAX_BATCH_SIZE = 200;
/** Keys per SOQL query: keeps the GET URL well under Salesforce's 16 KB limit. */
export const SALESFORCE_READ_CHUNK = 100;
export const SALESFORCE_DEFAULT_API_VERSION = '60.0';
export const SALESFORCE_DEFAULT_FIELDS = {
  contact: 'Ingest_Email__c',
  company: 'Ingest_Domain__c',
  activity: 'Ingest_Activity_Key__c',
} as const;

export interface SalesforceTarget {
  apiVersion: string;
  externalIdField: Readonly<Record<CrmObject, string>>;
}

const SOBJECT: Readonly<Record<CrmObject, 'Contact' | 'Account'>> = { contact: 'Contact', company: 'Account' };
/** Task.WhoId points at people, Task.WhatId at everything else (accounts). */
const TASK_RELATION: Readonly<Record<CrmObject, 'Who' | 'What'>> = { contact: 'Who', company: 'What' };
const API_NAME = /^[A-Za-z][A-Za-z0-9_]{0,79}$/;

export function salesforceTarget(credential: Extract<CrmCredential, { type: 'salesforce' }>): SalesforceTarget {
  return {
    apiVersion: (credential.apiVersion ?? SALESFORCE_DEFAULT_API_VERSION).replace(/^v/i, ''),
    externalIdField: {
      contact: credential.contactExternalIdField ?? SALESFORCE_DEFAULT_FIELDS.contact,
      company: credential.accountExternalIdField ?? SALESFORCE_DEFAULT_FIELDS.company,
    },
  };
}

/** Field names go into URLs and SOQL unquoted, so only Salesforce API names pass. */
export function assertApiName(name: string): string {
  if (!API_NAME.test(name)) throw new CrmError('permanent', `"${name.slice(0, 80)}" is not a Salesforce field API name`);
  return name;
}

/** A SOQL string literal: backslash, quotes and control characters escaped as SOQL defines them. */
export function soqlString(value: string): string {
  const escaped = value.replace(/[\\'"\n\r\t\b\f]/g, (c) => {
    switch (c) {
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      case '\b':
        return '\\b';
      case '\f':
        return '\\f';
      default:
        return `\\${c}`;
    }
  });
  return `'${escaped}'`;
}

function dataPath(target: SalesforceTarget, rest: string): string {
  return `/services/data/v${target.apiVersion}${rest}`;
}

function upsertRequest(target: SalesforceTarget, sobject: string, externalIdField: string, records: Record<string, unknown>[]): CrmRequest {
  return {
    method: 'PATCH',
    path: dataPath(target, `/composite/sobjects/${sobject}/${assertApiName(externalIdField)}`),
    body: { allOrNone: false, records: records.map((r) => ({ attributes: { type: sobject }, ...r })) },
  };
}

export function buildSalesforceUpsertRequests(target: SalesforceTarget, object: CrmObject, records: readonly RecordWrite[]): CrmRequest[] {
  const field = target.externalIdField[object];
  // Salesforce refuses one external id twice in a call; later values win, as they would in sequence.
  const merged = new Map<string, Record<string, unknown>>();
  for (const r of records) {
    for (const name of Object.keys(r.properties)) assertApiName(name);
    merged.set(r.key, { ...merged.get(r.key), ...r.properties, [field]: r.key });
  }
  return chunk([...merged.values()], SALESFORCE_MAX_BATCH_SIZE).map((batch) => upsertRequest(target, SOBJECT[object], field, batch));
}

export function buildSalesforceReadRequests(target: SalesforceTarget, object: CrmObject, keys: readonly string[], fields: readonly string[]): CrmRequest[] {
  const field = assertApiName(target.externalIdField[object]);
  const select = [...new Set(['Id', field, ...fields.map(assertApiName)])].join(', ');
  return chunk([...new Set(keys)], SALESFORCE_READ_CHUNK).map((batch) => {
    const soql = `SELECT ${select} FROM ${SOBJECT[object]} WHERE ${field} IN (${batch.map(soqlString).join(', ')})`;
    return { method: 'GET', path: dataPath(target, `/query?q=${encodeURIComponent(soql)}`) };
  });
}

/**
 * Tasks are upserted by their idempotency key, so creating one twice updates the same task:
 * idempotent without a lookup. The task links to its contact or account by that record's
 * external id, which Salesforce resolves (a polymorphic reference names its type).
 */
export function buildSalesforceActivityRequests(target: SalesforceTarget, activities: readonly ActivityWrite[]): CrmRequest[] {
  const tasks = new Map<string, Record<string, unknown>>();
  for (const a of activities) {
    tasks.set(a.idempotencyKey, {
      [SALESFORCE_DEFAULT_FIELDS.activity]: a.idempotencyKey,
      Subject: a.title.slice(0, 255),
      Description: `${a.type} at ${a.occurredAt}`,
      ActivityDate: a.occurredAt.slice(0, 10),
      Status: 'Completed',
      [TASK_RELATION[a.object]]: { attributes: { type: SOBJECT[a.object] }, [target.externalIdField[a.object]]: a.key },
    });
  }
  return chunk([...tasks.values()], SALESFORCE_MAX_BATCH_SIZE).map((batch) => upsertRequest(target, 'Task', SALESFORCE_DEFAULT_FIELDS.activity, batch));
}

/** The Ids a link needs: Contacts by email, Accounts by domain (queried, never created: a missing Account is linked later). */
export function buildSalesforceLinkIdRequests(target: SalesforceTarget, links: readonly ContactCompanyLink[]): CrmRequest[] {
  return [
    ...buildSalesforceReadRequests(
      target,
      'contact',
      links.map((l) => l.email),
      [],
    ),
    ...buildSalesforceReadRequests(
      target,
      'company',
      links.map((l) => l.domain),
      [],
    ),
  ];
}

/**
 * Each Contact's `AccountId`, upserted by its external id: setting the same Account again changes
 * nothing. `accountIds` maps a domain to its Account Id; a dry-run passes none and shows placeholders.
 */
export function buildSalesforceLinkUpdateRequests(
  target: SalesforceTarget,
  links: readonly ContactCompanyLink[],
  accountIds: ReadonlyMap<string, string> = new Map(),
): CrmRequest[] {
  const field = target.externalIdField.contact;
  const records = new Map<string, Record<string, unknown>>();
  for (const l of links) records.set(l.email, { [field]: l.email, AccountId: accountIds.get(l.domain) ?? recordIdPlaceholder('company', l.domain) });
  return chunk([...records.values()], SALESFORCE_MAX_BATCH_SIZE).map((batch) => upsertRequest(target, 'Contact', field, batch));
}

/** Every call `link` makes when both records exist, in order (dry-run). */
export function buildSalesforceLinkRequests(target: SalesforceTarget, links: readonly ContactCompanyLink[]): CrmRequest[] {
  return [...buildSalesforceLinkIdRequests(target, links), ...buildSalesforceLinkUpdateRequests(target, links)];
}

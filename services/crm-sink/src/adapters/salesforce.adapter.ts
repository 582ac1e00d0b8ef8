import type { CrmCredential } from '@ingest/domain';
import {
  type ActivityWrite,
  type ContactCompanyLink,
  type CrmBatchResult,
  type CrmLinkResult,
  type CrmAdapter,
  CrmError,
  type CrmObject,
  type PropertyValue,
  type CrmRecordFailure,
  type RecordWrite,
} from './adapter.js';
import type { CrmErrorDetail } from './crm-errors.js';
import { type AdapterHttpOptions, type CrmRequest, assertBatchSize, createCrmHttpClient, unexpectedResponse } from './http.client.js';
import {
  SALESFORCE_DEFAULT_FIELDS,
  SALESFORCE_MAX_BATCH_SIZE,
  buildSalesforceActivityRequests,
  buildSalesforceLinkUpdateRequests,
  buildSalesforceReadRequests,
  buildSalesforceUpsertRequests,
  salesforceTarget,
} from '@ingest/domain';

const CRM = 'Salesforce';
/** Salesforce sends no Retry-After; its limits are per rolling day, so back off for a minute. */
const SALESFORCE_DEFAULT_RETRY_AFTER_MS = 60_000;
/**
 * Pages one query may take. A query names at most SALESFORCE_READ_CHUNK (100) external ids, which
 * fit in one page (Salesforce pages hold 200 to 2,000 records); ten is a generous bound that a
 * healthy instance never reaches.
 */
export const SALESFORCE_MAX_QUERY_PAGES = 10;

/** `/services/data/v60.0/query/01gD0000002HU6KIAW-2000`: relative, this API version, a locator and nothing else. */
export function isQueryLocatorPath(target: { apiVersion: string }, path: string): boolean {
  const prefix = `/services/data/v${target.apiVersion}/query/`;
  return path.startsWith(prefix) && /^[A-Za-z0-9-]{1,64}$/.test(path.slice(prefix.length));
}

/** Salesforce errors are `[{ errorCode, message }]`; REQUEST_LIMIT_EXCEEDED comes as a 403 but is a rate limit. */
export function describeSalesforceError(_status: number, body: unknown): CrmErrorDetail {
  const first: unknown = Array.isArray(body) ? body[0] : body;
  if (typeof first !== 'object' || first === null) return { message: typeof body === 'string' ? body : undefined };
  const { errorCode, message } = first as { errorCode?: unknown; message?: unknown };
  const text = [errorCode, message].filter((p) => typeof p === 'string').join(': ') || undefined;
  return errorCode === 'REQUEST_LIMIT_EXCEEDED' ? { message: text, kind: 'rate_limited' } : { message: text };
}

interface SaveResult {
  success?: boolean;
  errors?: { statusCode?: string; message?: string }[];
}

interface QueryResult {
  done?: boolean;
  nextRecordsUrl?: string;
  records?: Record<string, unknown>[];
}

export function createSalesforceAdapter(
  credential: Extract<CrmCredential, { type: 'salesforce' }>,
  httpOptions: AdapterHttpOptions = {},
): CrmAdapter & { close(): Promise<void> } {
  const target = salesforceTarget(credential);
  const http = createCrmHttpClient({
    ...httpOptions,
    crm: CRM,
    baseUrl: credential.instanceUrl,
    headers: { authorization: `Bearer ${credential.accessToken}` },
    secrets: [credential.accessToken],
    describeError: describeSalesforceError,
    defaultRetryAfterMs: SALESFORCE_DEFAULT_RETRY_AFTER_MS,
  });

  /** sObject Collections answer one save result per record, in request order. */
  async function save(request: CrmRequest, keyField: string, signal?: AbortSignal): Promise<CrmRecordFailure[]> {
    const records = (request.body as { records: Record<string, unknown>[] }).records;
    const results = (await http.send(request, { signal })).body;
    if (!Array.isArray(results) || results.length !== records.length) throw unexpectedResponse(CRM, 'collection save result', [credential.accessToken]);
    const failures: CrmRecordFailure[] = [];
    (results as SaveResult[]).forEach((result, i) => {
      if (result.success === true) return;
      const message = (result.errors ?? []).map((e) => [e.statusCode, e.message].filter(Boolean).join(': ')).join('; ') || 'record refused';
      failures.push({ key: String(records[i]?.[keyField]), message });
    });
    return failures;
  }

  async function upsert(object: CrmObject, records: RecordWrite[], signal?: AbortSignal): Promise<CrmBatchResult> {
    assertBatchSize(CRM, records.length, SALESFORCE_MAX_BATCH_SIZE);
    const failures: CrmRecordFailure[] = [];
    for (const request of buildSalesforceUpsertRequests(target, object, records))
      failures.push(...(await save(request, target.externalIdField[object], signal)));
    return { failures };
  }

  /**
   * Every record of one SOQL query, following `nextRecordsUrl` at most SALESFORCE_MAX_QUERY_PAGES
   * pages and only to this instance's query locator path: an instance that always answers
   * `done: false`, or points the sink elsewhere, ends the call (permanent) instead of looping.
   */
  async function query(first: CrmRequest, signal?: AbortSignal): Promise<Record<string, unknown>[]> {
    const records: Record<string, unknown>[] = [];
    let request: CrmRequest | undefined = first;
    for (let pages = 0; request; pages++) {
      if (pages === SALESFORCE_MAX_QUERY_PAGES) {
        throw new CrmError('permanent', `${CRM} query did not end within ${SALESFORCE_MAX_QUERY_PAGES} pages (done stayed false)`);
      }
      signal?.throwIfAborted();
      const page = (await http.send(request, { signal })).body as QueryResult;
      if (typeof page !== 'object' || page === null || !Array.isArray(page.records)) throw unexpectedResponse(CRM, 'query result', [credential.accessToken]);
      records.push(...page.records);
      if (page.done !== false) break;
      const next = page.nextRecordsUrl;
      if (typeof next !== 'string' || !isQueryLocatorPath(target, next)) {
        throw new CrmError('permanent', `${CRM} answered a nextRecordsUrl that is not a query locator of this instance's API version`);
      }
      request = { method: 'GET', path: next };
    }
    return records;
  }

  async function read(object: CrmObject, keys: string[], fields: string[], signal?: AbortSignal): Promise<Map<string, Record<string, PropertyValue>>> {
    const keyField = target.externalIdField[object];
    const wanted = new Set(keys);
    const found = new Map<string, Record<string, PropertyValue>>();
    for (const first of buildSalesforceReadRequests(target, object, keys, fields)) {
      for (const r of await query(first, signal)) {
        const key = r[keyField];
        if (typeof key !== 'string' || !wanted.has(key)) continue;
        found.set(key, Object.fromEntries(fields.map((f) => [f, (r[f] ?? null) as PropertyValue])));
      }
    }
    return found;
  }

  async function createActivities(activities: ActivityWrite[], signal?: AbortSignal): Promise<CrmBatchResult> {
    assertBatchSize(CRM, activities.length, SALESFORCE_MAX_BATCH_SIZE);
    const failures: CrmRecordFailure[] = [];
    for (const request of buildSalesforceActivityRequests(target, activities))
      failures.push(...(await save(request, SALESFORCE_DEFAULT_FIELDS.activity, signal)));
    return { failures };
  }

  /**
   * Queries the Contacts by email and the Accounts by domain (nothing is created: Salesforce
   * requires fields the sink may not have, e.g. an Account's Name), then sets each found Contact's
   * `AccountId`, upserted by its external id. Setting the same Account again changes nothing.
   */
  async function link(links: ContactCompanyLink[], signal?: AbortSignal): Promise<CrmLinkResult> {
    assertBatchSize(CRM, links.length, SALESFORCE_MAX_BATCH_SIZE);
    const contacts = await read(
      'contact',
      links.map((l) => l.email),
      [],
      signal,
    );
    const accountIds = new Map<string, string>();
    const accountField = target.externalIdField.company;
    for (const request of buildSalesforceReadRequests(
      target,
      'company',
      links.map((l) => l.domain),
      [],
    )) {
      for (const r of await query(request, signal)) {
        const domain = r[accountField];
        if (typeof domain === 'string' && typeof r.Id === 'string') accountIds.set(domain, r.Id);
      }
    }
    const found = (l: ContactCompanyLink) => contacts.has(l.email) && accountIds.has(l.domain);
    const failures: CrmRecordFailure[] = [];
    for (const request of buildSalesforceLinkUpdateRequests(target, links.filter(found), accountIds)) {
      failures.push(...(await save(request, target.externalIdField.contact, signal)));
    }
    return { failures, missing: links.filter((l) => contacts.has(l.email) && !accountIds.has(l.domain)) };
  }

  return { type: 'salesforce', maxBatchSize: SALESFORCE_MAX_BATCH_SIZE, read, upsert, createActivities, link, close: () => http.close() };
}

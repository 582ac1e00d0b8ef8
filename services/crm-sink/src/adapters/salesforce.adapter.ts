import type { CrmCredential } from '@ingest/domain';
import type { ActivityWrite, CrmBatchResult, CrmAdapter, CrmObject, PropertyValue, CrmRecordFailure, RecordWrite } from './adapter.js';
import type { CrmErrorDetail } from './crm-errors.js';
import { type AdapterHttpOptions, type CrmRequest, assertBatchSize, createCrmHttpClient, unexpectedResponse } from './http.client.js';
import {
  SALESFORCE_DEFAULT_FIELDS,
  SALESFORCE_MAX_BATCH_SIZE,
  buildSalesforceActivityRequests,
  buildSalesforceReadRequests,
  buildSalesforceUpsertRequests,
  salesforceTarget,
} from '@ingest/domain';

const CRM = 'Salesforce';
/** Salesforce sends no Retry-After; its limits are per rolling day, so back off for a minute. */
const SALESFORCE_DEFAULT_RETRY_AFTER_MS = 60_000;

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
  async function save(request: CrmRequest, keyField: string): Promise<CrmRecordFailure[]> {
    const records = (request.body as { records: Record<string, unknown>[] }).records;
    const results = (await http.send(request)).body;
    if (!Array.isArray(results) || results.length !== records.length) throw unexpectedResponse(CRM, 'collection save result', [credential.accessToken]);
    const failures: CrmRecordFailure[] = [];
    (results as SaveResult[]).forEach((result, i) => {
      if (result.success === true) return;
      const message = (result.errors ?? []).map((e) => [e.statusCode, e.message].filter(Boolean).join(': ')).join('; ') || 'record refused';
      failures.push({ key: String(records[i]?.[keyField]), message });
    });
    return failures;
  }

  async function upsert(object: CrmObject, records: RecordWrite[]): Promise<CrmBatchResult> {
    assertBatchSize(CRM, records.length, SALESFORCE_MAX_BATCH_SIZE);
    const failures: CrmRecordFailure[] = [];
    for (const request of buildSalesforceUpsertRequests(target, object, records)) failures.push(...(await save(request, target.externalIdField[object])));
    return { failures };
  }

  async function read(object: CrmObject, keys: string[], fields: string[]): Promise<Map<string, Record<string, PropertyValue>>> {
    const keyField = target.externalIdField[object];
    const wanted = new Set(keys);
    const found = new Map<string, Record<string, PropertyValue>>();
    for (const first of buildSalesforceReadRequests(target, object, keys, fields)) {
      let request: CrmRequest | undefined = first;
      while (request) {
        const page = (await http.send(request)).body as QueryResult;
        if (typeof page !== 'object' || page === null || !Array.isArray(page.records)) throw unexpectedResponse(CRM, 'query result', [credential.accessToken]);
        for (const r of page.records) {
          const key = r[keyField];
          if (typeof key !== 'string' || !wanted.has(key)) continue;
          found.set(key, Object.fromEntries(fields.map((f) => [f, (r[f] ?? null) as PropertyValue])));
        }
        request = !page.done && page.nextRecordsUrl ? { method: 'GET', path: page.nextRecordsUrl } : undefined;
      }
    }
    return found;
  }

  async function createActivities(activities: ActivityWrite[]): Promise<CrmBatchResult> {
    assertBatchSize(CRM, activities.length, SALESFORCE_MAX_BATCH_SIZE);
    const failures: CrmRecordFailure[] = [];
    for (const request of buildSalesforceActivityRequests(target, activities)) failures.push(...(await save(request, SALESFORCE_DEFAULT_FIELDS.activity)));
    return { failures };
  }

  return { type: 'salesforce', maxBatchSize: SALESFORCE_MAX_BATCH_SIZE, read, upsert, createActivities, close: () => http.close() };
}

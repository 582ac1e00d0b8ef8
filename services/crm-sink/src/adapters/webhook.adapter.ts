import { type CrmCredential, WEBHOOK_SIGNATURE_HEADER, signWebhook } from '@ingest/shared';
import type { ActivityWrite, BatchResult, CrmAdapter, CrmObject, PropertyValue, RecordWrite } from './adapter.js';
import { type AdapterHttpOptions, type CrmRequest, assertBatchSize, createCrmHttpClient } from './http.client.js';
import { WEBHOOK_MAX_BATCH_SIZE, buildWebhookActivityRequests, buildWebhookUpsertRequests } from '@ingest/shared';

const CRM = 'Webhook';
/** A 429 from a customer's endpoint without Retry-After: back off briefly. */
const WEBHOOK_DEFAULT_RETRY_AFTER_MS = 5_000;

export function createWebhookAdapter(
  credential: Extract<CrmCredential, { type: 'webhook' }>,
  httpOptions: AdapterHttpOptions = {},
): CrmAdapter & { close(): Promise<void> } {
  const http = createCrmHttpClient({
    ...httpOptions,
    crm: CRM,
    baseUrl: credential.url,
    headers: { 'user-agent': 'ingest-crm-sink' },
    secrets: [credential.secret],
    defaultRetryAfterMs: WEBHOOK_DEFAULT_RETRY_AFTER_MS,
    describeError: (_status, body) => ({ message: typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body) }),
  });

  /** Signed over the exact bytes sent, at send time, so a retry carries a fresh timestamp. */
  async function deliver(request: CrmRequest): Promise<void> {
    const rawBody = JSON.stringify(request.body);
    await http.send(request, { rawBody, headers: { [WEBHOOK_SIGNATURE_HEADER.toLowerCase()]: signWebhook(credential.secret, rawBody) } });
  }

  async function upsert(object: CrmObject, records: RecordWrite[]): Promise<BatchResult> {
    assertBatchSize(CRM, records.length, WEBHOOK_MAX_BATCH_SIZE);
    for (const request of buildWebhookUpsertRequests(object, records, new Date().toISOString())) await deliver(request);
    return { failures: [] };
  }

  async function createActivities(activities: ActivityWrite[]): Promise<BatchResult> {
    assertBatchSize(CRM, activities.length, WEBHOOK_MAX_BATCH_SIZE);
    for (const request of buildWebhookActivityRequests(activities, new Date().toISOString())) await deliver(request);
    return { failures: [] };
  }

  /** A webhook has no readable state. */
  async function read(): Promise<Map<string, Record<string, PropertyValue>>> {
    return new Map();
  }

  return { type: 'webhook', maxBatchSize: WEBHOOK_MAX_BATCH_SIZE, read, upsert, createActivities, close: () => http.close() };
}

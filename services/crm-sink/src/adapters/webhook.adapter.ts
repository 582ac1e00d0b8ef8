import { createHash, randomBytes } from 'node:crypto';
import { type CrmCredential, WEBHOOK_SIGNATURE_HEADER, signWebhook, standardWebhookHeaders } from '@ingest/domain';
import { type ActivityWrite, type CrmBatchResult, type CrmAdapter, CrmError, type CrmObject, type PropertyValue, type RecordWrite } from './adapter.js';
import { type AdapterHttpOptions, type CrmRequest, assertBatchSize, createCrmHttpClient } from './http.client.js';
import { WEBHOOK_MAX_BATCH_SIZE, buildWebhookActivityRequests, buildWebhookUpsertRequests } from '@ingest/domain';

const CRM = 'Webhook';
/** A 429 from a customer's endpoint without Retry-After: back off briefly. */
const WEBHOOK_DEFAULT_RETRY_AFTER_MS = 5_000;
/** Deliveries waiting for a retry whose id and sentAt are kept; the oldest is forgotten beyond this. */
const MAX_PENDING_DELIVERIES = 1_000;

type Delivery = { id: string; sentAt: string };

/**
 * Deliveries are signed twice: Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`), which receivers verify with any Standard Webhooks library, and the older
 * `X-Ingest-Signature`, kept while receivers move over (docs/crm-sync.md). During a rotation
 * (`previousSecret` set) both secrets sign both headers.
 *
 * A delivery that failed and is retried keeps its `webhook-id` and body (its `sentAt`), so a
 * receiver that stored it but answered late can drop the repeat by id; only the timestamp and
 * signatures are new. Once a delivery succeeded (or failed for good), the same content later is
 * a new delivery with a new id: the same values sent again after other values must not be
 * dropped as a repeat. Pending deliveries are remembered per adapter (one account), bounded.
 */
export function createWebhookAdapter(
  credential: Extract<CrmCredential, { type: 'webhook' }>,
  httpOptions: AdapterHttpOptions = {},
): CrmAdapter & { close(): Promise<void> } {
  const secrets = credential.previousSecret ? [credential.secret, credential.previousSecret] : [credential.secret];
  const http = createCrmHttpClient({
    ...httpOptions,
    crm: CRM,
    baseUrl: credential.url,
    headers: { 'user-agent': 'ingest-crm-sink' },
    secrets,
    defaultRetryAfterMs: WEBHOOK_DEFAULT_RETRY_AFTER_MS,
    describeError: (_status, body) => ({ message: typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body) }),
  });
  const pending = new Map<string, Delivery>();

  function deliveryFor(content: string, sentAt: string): { key: string; delivery: Delivery } {
    const key = createHash('sha256').update(content).digest('base64url');
    let delivery = pending.get(key);
    if (!delivery) {
      delivery = { id: `msg_${randomBytes(16).toString('base64url')}`, sentAt };
      pending.set(key, delivery);
      if (pending.size > MAX_PENDING_DELIVERIES) pending.delete(pending.keys().next().value as string);
    }
    return { key, delivery };
  }

  /** Signed over the exact bytes sent, at send time, so a retry carries a fresh timestamp. */
  async function deliver(build: (sentAt: string) => CrmRequest, signal?: AbortSignal): Promise<void> {
    // The content without its send time identifies a delivery across retries.
    const { key, delivery } = deliveryFor(JSON.stringify(build('').body), new Date().toISOString());
    const request = build(delivery.sentAt);
    const rawBody = JSON.stringify(request.body);
    const headers = {
      ...standardWebhookHeaders(secrets, delivery.id, rawBody),
      [WEBHOOK_SIGNATURE_HEADER.toLowerCase()]: signWebhook(secrets, rawBody),
    };
    try {
      await http.send(request, { rawBody, headers, signal });
      pending.delete(key);
    } catch (err) {
      const retried = err instanceof CrmError && (err.kind === 'transient' || err.kind === 'rate_limited');
      if (!retried) pending.delete(key);
      throw err;
    }
  }

  async function upsert(object: CrmObject, records: RecordWrite[], signal?: AbortSignal): Promise<CrmBatchResult> {
    assertBatchSize(CRM, records.length, WEBHOOK_MAX_BATCH_SIZE);
    const count = buildWebhookUpsertRequests(object, records, '').length;
    for (let i = 0; i < count; i++) await deliver((sentAt) => buildWebhookUpsertRequests(object, records, sentAt)[i] as CrmRequest, signal);
    return { failures: [] };
  }

  async function createActivities(activities: ActivityWrite[], signal?: AbortSignal): Promise<CrmBatchResult> {
    assertBatchSize(CRM, activities.length, WEBHOOK_MAX_BATCH_SIZE);
    const count = buildWebhookActivityRequests(activities, '').length;
    for (let i = 0; i < count; i++) await deliver((sentAt) => buildWebhookActivityRequests(activities, sentAt)[i] as CrmRequest, signal);
    return { failures: [] };
  }

  /** A webhook has no readable state. */
  async function read(): Promise<Map<string, Record<string, PropertyValue>>> {
    return new Map();
  }

  return { type: 'webhook', maxBatchSize: WEBHOOK_MAX_BATCH_SIZE, read, upsert, createActivities, close: () => http.close() };
}

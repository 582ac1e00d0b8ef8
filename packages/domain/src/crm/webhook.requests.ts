import { type ActivityWrite, type CrmObject, type CrmRequest, type RecordWrite, chunk } from './crm-writes.js';

/** Pure builders of the webhook deliveries; the signature is added when a delivery is sent. */
export const WEBHOOK_MAX_BATCH_SIZE = 100;

export type WebhookPayload =
  | { type: 'records.upsert'; object: CrmObject; records: { key: string; properties: RecordWrite['properties'] }[]; sentAt: string }
  | { type: 'activities.create'; activities: ActivityWrite[]; sentAt: string };

export function buildWebhookUpsertRequests(object: CrmObject, records: readonly RecordWrite[], sentAt: string): CrmRequest[] {
  return chunk(records, WEBHOOK_MAX_BATCH_SIZE).map((batch) => ({
    method: 'POST',
    path: '',
    body: { type: 'records.upsert', object, records: batch.map((r) => ({ key: r.key, properties: r.properties })), sentAt } satisfies WebhookPayload,
  }));
}

/** Receivers dedupe activities by `idempotencyKey`; a redelivered batch repeats the same keys. */
export function buildWebhookActivityRequests(activities: readonly ActivityWrite[], sentAt: string): CrmRequest[] {
  return chunk(activities, WEBHOOK_MAX_BATCH_SIZE).map((batch) => ({
    method: 'POST',
    path: '',
    body: {
      type: 'activities.create',
      activities: batch.map(({ object, key, type, title, occurredAt, idempotencyKey }) => ({ object, key, type, title, occurredAt, idempotencyKey })),
      sentAt,
    } satisfies WebhookPayload,
  }));
}

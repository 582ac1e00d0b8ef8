import type { CrmCredential } from '@ingest/shared';
import type { ActivityWrite, CrmAdapter, CrmObject, RecordWrite } from './adapter.js';
import { createHubSpotAdapter } from './hubspot.adapter.js';
import type { AdapterHttpOptions, CrmRequest } from './http.client.js';
import { buildHubSpotActivityRequests, buildHubSpotReadRequests, buildHubSpotUpsertRequests } from './hubspot.requests.js';
import { createSalesforceAdapter } from './salesforce.adapter.js';
import { buildSalesforceActivityRequests, buildSalesforceReadRequests, buildSalesforceUpsertRequests, salesforceTarget } from './salesforce.requests.js';
import { createWebhookAdapter } from './webhook.adapter.js';
import { buildWebhookActivityRequests, buildWebhookUpsertRequests } from './webhook.requests.js';

export * from './adapter.js';
export { type AdapterHttpOptions, type CrmCallObservation, type CrmRequest } from './http.client.js';
export { parseRetryAfterMs } from './crm-errors.js';

/** An adapter owns a keep-alive connection pool; `close` releases it when the account's adapter is dropped. */
export type ClosableCrmAdapter = CrmAdapter & { close(): Promise<void> };

export function createAdapter(credential: CrmCredential, httpOptions: AdapterHttpOptions = {}): ClosableCrmAdapter {
  switch (credential.type) {
    case 'hubspot':
      return createHubSpotAdapter(credential, httpOptions);
    case 'salesforce':
      return createSalesforceAdapter(credential, httpOptions);
    case 'webhook':
      return createWebhookAdapter(credential, httpOptions);
  }
}

/**
 * The HTTP calls an adapter would make, without making them (dry-run). Paths are relative to
 * the credential's base URL; HubSpot note associations show `<id of contact …>` placeholders
 * for the ids the record upsert before them returns.
 */
export interface CrmRequestPlanner {
  upsert(object: CrmObject, records: readonly RecordWrite[]): CrmRequest[];
  read(object: CrmObject, keys: readonly string[], fields: readonly string[]): CrmRequest[];
  createActivities(activities: readonly ActivityWrite[]): CrmRequest[];
}

export function requestPlanner(credential: CrmCredential, now: () => Date = () => new Date()): CrmRequestPlanner {
  switch (credential.type) {
    case 'hubspot':
      return { upsert: buildHubSpotUpsertRequests, read: buildHubSpotReadRequests, createActivities: buildHubSpotActivityRequests };
    case 'salesforce': {
      const target = salesforceTarget(credential);
      return {
        upsert: (object, records) => buildSalesforceUpsertRequests(target, object, records),
        read: (object, keys, fields) => buildSalesforceReadRequests(target, object, keys, fields),
        createActivities: (activities) => buildSalesforceActivityRequests(target, activities),
      };
    }
    case 'webhook':
      return {
        upsert: (object, records) => buildWebhookUpsertRequests(object, records, now().toISOString()),
        read: () => [],
        createActivities: (activities) => buildWebhookActivityRequests(activities, now().toISOString()),
      };
  }
}

import type { CrmCredential } from '@ingest/domain';
import type { CrmAdapter } from './adapter.js';
import { createHubSpotAdapter } from './hubspot.adapter.js';
import type { AdapterHttpOptions } from './http.client.js';
import { createSalesforceAdapter } from './salesforce.adapter.js';
import { createWebhookAdapter } from './webhook.adapter.js';

export * from './adapter.js';
export { type AdapterHttpOptions, type CrmCallObservation, type CrmRequest } from './http.client.js';
export { parseRetryAfterMs } from './crm-errors.js';
// The dry-run's planner: the same request builders, in @ingest/domain so the gateway can use them.
export { type CrmRequestPlanner, requestPlanner } from '@ingest/domain';

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

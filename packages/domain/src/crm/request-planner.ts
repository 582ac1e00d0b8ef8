import type { CrmCredential } from '../control-plane/types.js';
import type { ContactCompanyLink } from './crm-links.js';
import type { ActivityWrite, CrmObject, CrmRequest, RecordWrite } from './crm-writes.js';
import { buildHubSpotActivityRequests, buildHubSpotLinkRequests, buildHubSpotReadRequests, buildHubSpotUpsertRequests } from './hubspot.requests.js';
import {
  buildSalesforceActivityRequests,
  buildSalesforceLinkRequests,
  buildSalesforceReadRequests,
  buildSalesforceUpsertRequests,
  salesforceTarget,
} from './salesforce.requests.js';
import { buildWebhookActivityRequests, buildWebhookUpsertRequests } from './webhook.requests.js';

/**
 * The HTTP calls an adapter would make, without making them (dry-run). Paths are relative to
 * the credential's base URL; HubSpot note associations show `<id of contact …>` placeholders
 * for the ids the record upsert before them returns. The adapters send these same builders'
 * requests, so a dry-run cannot drift from what the sink sends.
 */
export interface CrmRequestPlanner {
  upsert(object: CrmObject, records: readonly RecordWrite[]): CrmRequest[];
  read(object: CrmObject, keys: readonly string[], fields: readonly string[]): CrmRequest[];
  createActivities(activities: readonly ActivityWrite[]): CrmRequest[];
  /** Contacts linked to companies, as sent when both records exist (ids shown as placeholders). */
  link(links: readonly ContactCompanyLink[]): CrmRequest[];
}

export function requestPlanner(credential: CrmCredential, now: () => Date = () => new Date()): CrmRequestPlanner {
  switch (credential.type) {
    case 'hubspot':
      return {
        upsert: buildHubSpotUpsertRequests,
        read: buildHubSpotReadRequests,
        createActivities: buildHubSpotActivityRequests,
        link: buildHubSpotLinkRequests,
      };
    case 'salesforce': {
      const target = salesforceTarget(credential);
      return {
        upsert: (object, records) => buildSalesforceUpsertRequests(target, object, records),
        read: (object, keys, fields) => buildSalesforceReadRequests(target, object, keys, fields),
        createActivities: (activities) => buildSalesforceActivityRequests(target, activities),
        link: (links) => buildSalesforceLinkRequests(target, links),
      };
    }
    case 'webhook':
      return {
        upsert: (object, records) => buildWebhookUpsertRequests(object, records, now().toISOString()),
        // A webhook has no readable state: the adapter reads nothing and seeds from empty values.
        read: () => [],
        createActivities: (activities) => buildWebhookActivityRequests(activities, now().toISOString()),
        // A receiver gets each record with its key; it links them itself (no link call).
        link: () => [],
      };
  }
}

import type { ActivityWrite, ContactCompanyLink, CrmCredential, CrmObject, CrmType, PropertyValue, RecordWrite } from '@ingest/domain';
import type { BearerSource } from './http.client.js';

// The write types and CrmError live in @ingest/domain, beside the request builders the gateway's dry-run shares.
export { type ActivityWrite, type ContactCompanyLink, type CrmErrorKind, type CrmObject, type PropertyValue, type RecordWrite, CrmError } from '@ingest/domain';

/** A record the CRM refused inside an otherwise successful batch call (e.g. HubSpot 207). */
export interface CrmRecordFailure {
  key: string;
  message: string;
}

export interface CrmBatchResult {
  failures: CrmRecordFailure[];
}

export interface CrmLinkResult {
  /** Links the CRM refused; `key` is the contact's email. */
  failures: CrmRecordFailure[];
  /** Links not made because the company does not exist (yet) while the contact does: the sink links them once it writes the company. Links whose contact does not exist are dropped. */
  missing: ContactCompanyLink[];
}

/**
 * The one interface every CRM adapter implements (HubSpot, Salesforce, signed webhook). The sink
 * hands adapters final values only (see RecordWrite), so writing the same record twice changes
 * nothing the second time. That is what makes a retried or replayed call safe.
 */
/**
 * Every method takes an optional `signal`: once it fires (the account's hold, the sink's
 * shutdown) the adapter sends no further request and the one in flight is cut off.
 */
export interface CrmAdapter {
  readonly type: CrmType;
  /** Most records (or activities) one call may carry, e.g. 100 for HubSpot batch upsert. */
  readonly maxBatchSize: number;
  /**
   * Current values of `fields` for the given keys, for setOnce and for seeding the sink's state
   * the first time it touches a record's increment/max/min/append field. Keys the CRM does not
   * know are absent from the map. A webhook has no readable state and returns an empty map.
   */
  read(object: CrmObject, keys: string[], fields: string[], signal?: AbortSignal): Promise<Map<string, Record<string, PropertyValue>>>;
  /** Creates or updates records by key (at most maxBatchSize). Throws CrmError for whole-call failures. */
  upsert(object: CrmObject, records: RecordWrite[], signal?: AbortSignal): Promise<CrmBatchResult>;
  /** Creates timeline records idempotently by `idempotencyKey` (at most maxBatchSize). */
  createActivities(activities: ActivityWrite[], signal?: AbortSignal): Promise<CrmBatchResult>;
  /**
   * Links contacts to companies (at most maxBatchSize), both found by key and neither created;
   * linking again changes nothing. Absent where the CRM has no links (webhook).
   */
  link?(links: ContactCompanyLink[], signal?: AbortSignal): Promise<CrmLinkResult>;
}

/** `bearer`: the token source of an OAuth or JWT bearer credential (its HTTP client takes tokens from it). */
export type CreateAdapter = (credential: CrmCredential, bearer?: BearerSource) => CrmAdapter;

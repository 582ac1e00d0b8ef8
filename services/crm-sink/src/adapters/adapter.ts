import type { CrmCredential, CrmType } from '@ingest/shared';

/**
 * The one interface every CRM adapter implements (HubSpot, Salesforce, signed webhook). The sink
 * hands adapters final values only: it has already merged set, setOnce, increment, max, min and
 * append into absolute property values from its own state, so writing the same record twice
 * changes nothing the second time. That is what makes a retried or replayed call safe.
 */
export type CrmObject = 'contact' | 'company';

export type PropertyValue = string | number | boolean | null;

/** One CRM record's final values; `key` is the email (contact) or domain (company). */
export interface RecordWrite {
  object: CrmObject;
  key: string;
  properties: Record<string, PropertyValue>;
}

/**
 * A timeline record (HubSpot note, Salesforce task, webhook `activity`). `idempotencyKey` is
 * the ledger key of (account, eventId, rule): adapters create activities so that a second
 * create with the same key is refused or merged by the CRM, and treat that as success.
 */
export interface ActivityWrite {
  object: CrmObject;
  key: string;
  type: string;
  title: string;
  occurredAt: string;
  idempotencyKey: string;
}

/** A record the CRM refused inside an otherwise successful batch call (e.g. HubSpot 207). */
export interface RecordFailure {
  key: string;
  message: string;
}

export interface BatchResult {
  failures: RecordFailure[];
}

export type CrmErrorKind =
  /** 429: retry after `retryAfterMs`, pausing only this account's work. */
  | 'rate_limited'
  /** 5xx, timeouts, connection errors: retry with backoff and jitter. */
  | 'transient'
  /** 4xx other than 429: retrying cannot help; dead-letter with the CRM's message. */
  | 'permanent'
  /** 401/403: the credential is wrong or expired; dead-letter, never log the secret. */
  | 'auth';

export class CrmError extends Error {
  constructor(
    readonly kind: CrmErrorKind,
    message: string,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'CrmError';
  }
}

export interface CrmAdapter {
  readonly type: CrmType;
  /** Most records (or activities) one call may carry, e.g. 100 for HubSpot batch upsert. */
  readonly maxBatchSize: number;
  /**
   * Current values of `fields` for the given keys, for setOnce and for seeding the sink's state
   * the first time it touches a record's increment/max/min/append field. Keys the CRM does not
   * know are absent from the map. A webhook has no readable state and returns an empty map.
   */
  read(object: CrmObject, keys: string[], fields: string[]): Promise<Map<string, Record<string, PropertyValue>>>;
  /** Creates or updates records by key (at most maxBatchSize). Throws CrmError for whole-call failures. */
  upsert(object: CrmObject, records: RecordWrite[]): Promise<BatchResult>;
  /** Creates timeline records idempotently by `idempotencyKey` (at most maxBatchSize). */
  createActivities(activities: ActivityWrite[]): Promise<BatchResult>;
}

export type CreateAdapter = (credential: CrmCredential) => CrmAdapter;

/**
 * What the CRM sink writes, as plain data: shared by the sink's adapters, which send it, and by
 * the gateway's dry-run, which shows the same HTTP calls without sending them. The sink hands
 * adapters final values only: it has already merged set, setOnce, increment, max, min and
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

/** One HTTP call as the pure request builders describe it; `path` is relative to the base URL. */
export interface CrmRequest {
  method: 'GET' | 'POST' | 'PATCH';
  path: string;
  body?: unknown;
}

export type CrmErrorKind =
  /** 429: retry after `retryAfterMs`, pausing only this account's work. */
  | 'rate_limited'
  /** 5xx, timeouts, connection errors: retry with backoff and jitter. */
  | 'transient'
  /** 4xx other than 429: retrying cannot help; dead-letter with the CRM's message. */
  | 'permanent'
  /** 401/403: the credential is wrong or expired; dead-letter, never log the secret. */
  | 'auth'
  /** The outbound address policy refused the destination (outbound-policy.ts): dead-letter; fix the URL, then replay. */
  | 'forbidden';

/** Lives here because a request builder may refuse a write before any call (a Salesforce field that is no API name). */
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

/** Consecutive slices of at most `size` items. */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const chunks: T[][] = [];
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size));
  return chunks;
}

/**
 * The request target (path and query) the HTTP client sends for a builder's `path`, given the
 * credential's base URL. An empty path is the base URL itself, query string included (a webhook
 * URL may carry one). The dry-run shows this, so its paths are the ones the CRM receives.
 */
export function requestTarget(baseUrl: string, path: string): string {
  const base = new URL(baseUrl);
  return path === '' ? `${base.pathname}${base.search}` : `${base.pathname.replace(/\/+$/, '')}${path}`;
}

import type { QueuedEvent } from './event.types.js';

/**
 * What the client tells its caller, classified by a stable `code` (never by message text), as
 * the API's own errors are. `status` is the HTTP status when an answer came; `problem` is the
 * API's RFC 9457 body when it was one.
 */
export interface FieldError {
  /** Position of the event in the request that was sent (0-based), when the API named one. */
  index?: number;
  eventId?: string;
  /** JSON Pointer relative to the event (`/email`), as the local check and the API name it. */
  field?: string;
  code: string;
  message: string;
}

export type ClientErrorCode =
  /** The event breaks a rule of the API; refused before any request (`errors` has the API's codes). */
  | 'invalid_event'
  /** The monthly allowance is used up (402): sending has stopped until `resume()`. */
  | 'quota_exceeded'
  /** A batch was given up after its retries (network errors, timeouts, 429/5xx, garbage answers). */
  | 'retries_exhausted'
  /** The API refused the request in a way no retry can fix (400, 401, 403, 404, 413, 415...). */
  | 'request_refused'
  /** The queue is full and so many callers already wait that one more would grow memory without bound. */
  | 'queue_full'
  /** `track()` after `close()`. */
  | 'closed'
  /** `close({ timeoutMs })` passed its deadline before everything was sent. */
  | 'close_timeout'
  /** Polling a job (bulk, CSV) was given up (`maxWaitMs`); a job that ended `failed` is returned, with its `failureReason`. */
  | 'job_failed';

export class IngestClientError extends Error {
  readonly code: ClientErrorCode;
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly errors: readonly FieldError[];
  readonly problem: Readonly<Record<string, unknown>> | undefined;
  /** How many events this error concerns (a given-up batch, the queue held back by a 402). */
  readonly eventCount: number;
  /** The events given up (a batch after its retries, or refused), so the caller can keep them elsewhere. */
  readonly events: readonly QueuedEvent[];

  constructor(
    code: ClientErrorCode,
    message: string,
    details: {
      status?: number;
      errors?: FieldError[];
      problem?: Record<string, unknown>;
      eventCount?: number;
      events?: QueuedEvent[];
      retryable?: boolean;
      cause?: unknown;
    } = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'IngestClientError';
    this.code = code;
    this.retryable = details.retryable ?? false;
    this.status = details.status;
    this.errors = details.errors ?? [];
    this.problem = details.problem;
    this.eventCount = details.eventCount ?? 0;
    this.events = details.events ?? [];
  }
}

/** The quota fields of a 402 (`/problems/quota-exceeded`), as the API sends them. */
export interface QuotaInfo {
  limit?: number;
  used?: number;
  remaining?: number;
  /** ISO 8601 instant at which the allowance resets. */
  resetsAt?: string;
}

export class QuotaExceededError extends IngestClientError {
  readonly quota: QuotaInfo;
  constructor(quota: QuotaInfo, problem: Record<string, unknown> | undefined, eventCount: number) {
    super('quota_exceeded', `the monthly event allowance is used up (limit ${quota.limit ?? '?'}, resets at ${quota.resetsAt ?? '?'}); sending has stopped`, {
      status: 402,
      ...(problem ? { problem } : {}),
      eventCount,
    });
    this.name = 'QuotaExceededError';
    this.quota = quota;
  }
}

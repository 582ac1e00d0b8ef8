import { ProblemDetails } from '@ingest/schemas';
import { boundErrors } from '@ingest/domain';

/**
 * RFC 9457 problem details. Every error response of the API is one of these, with the
 * request's id, so a caller can quote it to support and we can find the log line.
 *
 * `type` is a relative URI naming the problem; docs/api.md lists them all.
 */
export interface FieldError {
  /** Position in a batch (0-based) for per-event errors. */
  index?: number;
  eventId?: string;
  /** JSON Pointer into the request body, e.g. `/events/3/email`. */
  field?: string;
  /** CSV errors: 1-based row (the header is row 1) and column name. */
  row?: number;
  column?: string;
  /** Stable machine word: `required`, `too_long`, `invalid_format`, ... */
  code: string;
  message: string;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  requestId: string;
  errors?: FieldError[];
  /** Present only when `errors` lists the first 100 of more. */
  errorsTotal?: number;
  errorsTruncated?: true;
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

export const PROBLEMS = {
  validation: { status: 400, type: '/problems/validation-error', title: 'Request is invalid' },
  invalidJson: { status: 400, type: '/problems/invalid-json', title: 'Body is not valid JSON' },
  unauthorized: { status: 401, type: '/problems/unauthorized', title: 'Missing or invalid API key' },
  quotaExceeded: { status: 402, type: '/problems/quota-exceeded', title: 'Monthly event allowance exhausted' },
  notSignedIn: { status: 401, type: '/problems/not-signed-in', title: 'Not signed in' },
  signInFailed: { status: 401, type: '/problems/sign-in-failed', title: 'Email or password is wrong' },
  secondFactorRequired: { status: 401, type: '/problems/second-factor-required', title: 'A second factor is required' },
  secondFactorFailed: { status: 401, type: '/problems/second-factor-failed', title: 'The second factor is wrong' },
  secondFactorSetupRequired: { status: 403, type: '/problems/second-factor-setup-required', title: 'Set up a second factor first' },
  forbidden: { status: 403, type: '/problems/forbidden', title: 'Not allowed' },
  /** The key is valid but lacks the route's scope (extension `scope` names it). */
  missingScope: { status: 403, type: '/problems/missing-scope', title: 'The API key lacks the scope this route needs' },
  accountSuspended: { status: 403, type: '/problems/account-suspended', title: 'Account suspended' },
  notFound: { status: 404, type: '/problems/not-found', title: 'Not found' },
  methodNotAllowed: { status: 405, type: '/problems/method-not-allowed', title: 'Method not allowed' },
  requestTimeout: { status: 408, type: '/problems/request-timeout', title: 'Request timed out' },
  conflict: { status: 409, type: '/problems/conflict', title: 'Conflict' },
  idempotencyKeyInUse: { status: 409, type: '/problems/idempotency-key-in-use', title: 'A request with this Idempotency-Key is in progress' },
  preconditionFailed: { status: 412, type: '/problems/precondition-failed', title: 'Precondition failed' },
  payloadTooLarge: { status: 413, type: '/problems/payload-too-large', title: 'Body too large' },
  unsupportedMediaType: { status: 415, type: '/problems/unsupported-media-type', title: 'Unsupported content type' },
  idempotencyKeyReused: { status: 422, type: '/problems/idempotency-key-reused', title: 'Idempotency-Key already used for another request' },
  rateLimited: { status: 429, type: '/problems/rate-limited', title: 'Too many requests' },
  internal: { status: 500, type: '/problems/internal', title: 'Internal error' },
  unavailable: { status: 503, type: '/problems/unavailable', title: 'Temporarily unavailable' },
  /** A call made to the account's CRM on its behalf (the dashboard's property reads) was refused or failed there; `detail` says how. */
  crmRefused: { status: 502, type: '/problems/crm-refused', title: 'The CRM refused or failed the call' },
  /** Kafka took a write but gave no answer in time: it may be stored (never said as 503, which means "not written"). */
  outcomeUnknown: { status: 504, type: '/problems/outcome-unknown', title: 'Outcome unknown' },
} as const;

export type ProblemKind = keyof typeof PROBLEMS;

/** Thrown by routes and hooks; the error handler renders it. */
export class ProblemError extends Error {
  readonly kind: ProblemKind;
  readonly detail: string;
  /** At most MAX_ERRORS_LISTED; `errorsTotal` counts all that were found. */
  readonly errors: FieldError[] | undefined;
  readonly errorsTotal: number;
  readonly extensions: Record<string, unknown>;
  readonly headers: Record<string, string>;

  constructor(
    kind: ProblemKind,
    detail: string,
    options: {
      errors?: FieldError[];
      /** When the caller kept only the first errors itself (BoundedErrors): how many it found. */
      errorsTotal?: number;
      extensions?: Record<string, unknown>;
      headers?: Record<string, string>;
      cause?: unknown;
    } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = 'ProblemError';
    this.kind = kind;
    this.detail = detail;
    const bounded = options.errors ? boundErrors(options.errors) : undefined;
    this.errors = bounded?.errors;
    this.errorsTotal = Math.max(options.errorsTotal ?? 0, bounded?.errorsTotal ?? bounded?.errors.length ?? 0);
    this.extensions = options.extensions ?? {};
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return PROBLEMS[this.kind].status;
  }
}

export function problemBody(
  kind: ProblemKind,
  detail: string,
  requestId: string,
  extra: { errors?: FieldError[]; errorsTotal?: number; extensions?: Record<string, unknown> } = {},
): ProblemBody {
  const { status, type, title } = PROBLEMS[kind];
  const listed = extra.errors ? boundErrors(extra.errors) : undefined;
  const total = Math.max(extra.errorsTotal ?? 0, listed?.errorsTotal ?? 0);
  return {
    ...extra.extensions,
    type,
    title,
    status,
    detail,
    requestId,
    ...(listed && listed.errors.length > 0 ? { errors: listed.errors } : {}),
    ...(listed && total > listed.errors.length ? { errorsTotal: total, errorsTruncated: true as const } : {}),
  };
}

/**
 * Response schemas for the given error statuses, documented with the media type the API
 * really sends (application/problem+json), for the routes' `schema.response`.
 */
export function problemResponses(...statuses: number[]): Record<number, { description: string; content: Record<string, { schema: typeof ProblemDetails }> }> {
  return Object.fromEntries(
    statuses.map((status) => {
      const known = Object.values(PROBLEMS).find((p) => p.status === status);
      return [status, { description: known?.title ?? 'Problem', content: { 'application/problem+json': { schema: ProblemDetails } } }];
    }),
  );
}

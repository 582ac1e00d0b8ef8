import { CrmError, type CrmErrorKind } from './adapter.js';
import { ADDRESS_NOT_ALLOWED } from '@ingest/domain';

/**
 * The one place HTTP outcomes become CrmError kinds, for every adapter: the sink retries
 * `transient` with backoff, waits `retryAfterMs` on `rate_limited`, and dead-letters `permanent`
 * and `auth` with the message built here (which therefore must never carry a credential).
 */
export const DEFAULT_RETRY_AFTER_MS = 10_000;
const MAX_MESSAGE_LENGTH = 300;

/** `Retry-After` as delay-seconds or an HTTP-date; undefined when absent or unreadable. */
export function parseRetryAfterMs(value: string | string[] | undefined, nowMs = Date.now()): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!raw) return undefined;
  if (/^\d+$/.test(raw)) return Number(raw) * 1000;
  const at = Date.parse(raw);
  return Number.isFinite(at) ? Math.max(0, at - nowMs) : undefined;
}

/** Removes every secret (and anything that looks like a bearer token) and bounds the length. */
export function safeMessage(message: string, secrets: readonly string[]): string {
  let text = message;
  for (const secret of secrets) if (secret.length >= 4) text = text.split(secret).join('[redacted]');
  text = text
    .replace(/Bearer\s+[^\s"',]+/gi, 'Bearer [redacted]')
    .replace(/\s+/g, ' ')
    .trim();
  return text.length > MAX_MESSAGE_LENGTH ? `${text.slice(0, MAX_MESSAGE_LENGTH - 1)}…` : text;
}

/** What a CRM says in an error body: its message, and optionally a kind that overrides the status's. */
export interface CrmErrorDetail {
  message?: string;
  kind?: CrmErrorKind;
}

export interface HttpFailure {
  crm: string;
  status: number;
  retryAfter?: string | string[];
  detail: CrmErrorDetail;
  secrets: readonly string[];
  defaultRetryAfterMs?: number;
  nowMs?: number;
}

export function kindOfStatus(status: number): CrmErrorKind {
  if (status === 429) return 'rate_limited';
  if (status === 401 || status === 403) return 'auth';
  if (status === 408 || status >= 500) return 'transient';
  return 'permanent';
}

export function classifyHttpFailure(failure: HttpFailure): CrmError {
  const kind = failure.detail.kind ?? kindOfStatus(failure.status);
  const text = failure.detail.message ? `: ${failure.detail.message}` : '';
  const message = safeMessage(`${failure.crm} answered ${failure.status}${text}`, failure.secrets);
  if (kind !== 'rate_limited') return new CrmError(kind, message, failure.status);
  const retryAfterMs = parseRetryAfterMs(failure.retryAfter, failure.nowMs) ?? failure.defaultRetryAfterMs ?? DEFAULT_RETRY_AFTER_MS;
  return new CrmError(kind, message, failure.status, retryAfterMs);
}

/**
 * Timeouts, refused or reset connections, DNS failures: the CRM may answer on a later try. An
 * address the outbound policy refused (guarded-connect.ts) is `forbidden`: retrying cannot help.
 */
export function classifyNetworkError(crm: string, err: unknown, secrets: readonly string[]): CrmError {
  const code = typeof err === 'object' && err !== null && 'code' in err ? String((err as { code: unknown }).code) : undefined;
  if (code === ADDRESS_NOT_ALLOWED) {
    const refused = new CrmError('forbidden', safeMessage(`${crm} request refused by the outbound address policy: ${(err as Error).message}`, secrets));
    refused.cause = err;
    return refused;
  }
  const name = typeof err === 'object' && err !== null && 'name' in err ? String((err as { name: unknown }).name) : 'Error';
  // The whole-call timeout is a DOMException whose numeric `code` (23) says nothing: name it.
  const timedOut = name === 'TimeoutError' || name === 'AbortError';
  const reason = timedOut ? 'request timed out' : (code ?? (err instanceof Error ? err.message : String(err)));
  const crmError = new CrmError('transient', safeMessage(`${crm} request failed: ${reason}`, secrets));
  crmError.cause = err;
  return crmError;
}

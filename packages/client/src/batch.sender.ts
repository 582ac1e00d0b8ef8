import { type FieldError, IngestClientError, QuotaExceededError, type QuotaInfo } from './errors.js';
import type { QueuedEvent } from './event.types.js';
import { exchange, prepareJson, type TransportOptions } from './http.transport.js';
import { backoffMs, type RetryOptions, serverDelayMs } from './retry.policy.js';

/**
 * Sends one batch to `POST /v1/events` until it has an answer that settles it: every event
 * carries a client-made id, so a retry after a timeout, a reset or a 504 (outcome unknown) is
 * stored once. Retried: network errors and timeouts, 408, 429, 500, 502, 503, 504, and a 2xx
 * whose body is not a receipt (the events may or may not be stored: the ids make that safe).
 * Settled: a 202 (accepted events, and the rejected ones with their codes), a 400 that lists
 * per-event errors, a 402 (sending stops), and any other answer (refused: no retry can fix it).
 */
export interface Rejection {
  event: QueuedEvent;
  code: string;
  field?: string;
  message: string;
}

export type BatchOutcome =
  | { kind: 'delivered'; accepted: number; rejected: Rejection[]; rateLimitWaitMs?: number }
  /** 402, or a 202 whose rejections are quota_exceeded: `unsent` are to be sent again after `resume()`. */
  | { kind: 'quota'; accepted: number; rejected: Rejection[]; unsent: QueuedEvent[]; error: QuotaExceededError }
  | { kind: 'failed'; error: IngestClientError };

export interface SenderDeps {
  transport: TransportOptions;
  retry: RetryOptions;
  now: () => number;
  random: () => number;
  sleep: (ms: number) => Promise<void>;
  /** Counts every retry (the client's stats). */
  onRetry: () => void;
}

const RETRY_STATUSES = new Set([408, 429, 500, 502, 503, 504]);

interface Receipt {
  accepted: number;
  eventIds: string[];
  errors?: { index?: number; field?: string; code: string; message: string }[];
}

const isReceipt = (b: unknown): b is Receipt =>
  typeof b === 'object' && b !== null && typeof (b as Receipt).accepted === 'number' && Array.isArray((b as Receipt).eventIds);

const asRecord = (b: unknown): Record<string, unknown> | undefined =>
  typeof b === 'object' && b !== null && !Array.isArray(b) ? (b as Record<string, unknown>) : undefined;

/** `/events/3/email` → `/email`: the field relative to the event, as the local check names it. */
const relativeField = (field: string | undefined) => field?.replace(/^\/events\/\d+/, '');

/** The events of the batch the API did not take, with the reason it gave (by index; a truncated list leaves some without). */
function rejectionsOf(batch: QueuedEvent[], accepted: ReadonlySet<string>, errors: Receipt['errors']): Rejection[] {
  const byIndex = new Map<number, NonNullable<Receipt['errors']>[number]>();
  for (const e of errors ?? []) if (e.index !== undefined && !byIndex.has(e.index)) byIndex.set(e.index, e);
  return batch.flatMap((event, index) => {
    if (accepted.has(event.eventId)) return [];
    const why = byIndex.get(index);
    const field = relativeField(why?.field);
    return [
      {
        event,
        code: why?.code ?? 'rejected',
        ...(field !== undefined ? { field } : {}),
        message: why?.message ?? 'rejected by the API (its error list was truncated)',
      },
    ];
  });
}

function quotaOf(problem: Record<string, unknown> | undefined, headers: Headers): QuotaInfo {
  const num = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'string' && v !== '' && Number.isFinite(Number(v)) ? Number(v) : undefined);
  const limit = num(problem?.limit) ?? num(headers.get('x-quota-limit'));
  const used = num(problem?.used);
  const remaining = num(problem?.remaining) ?? num(headers.get('x-quota-remaining'));
  const resetsAt = typeof problem?.resetsAt === 'string' ? problem.resetsAt : (headers.get('x-quota-reset') ?? undefined);
  return {
    ...(limit !== undefined ? { limit } : {}),
    ...(used !== undefined ? { used } : {}),
    ...(remaining !== undefined ? { remaining } : {}),
    ...(resetsAt ? { resetsAt } : {}),
  };
}

export async function sendBatch(deps: SenderDeps, batch: QueuedEvent[], signal?: AbortSignal): Promise<BatchOutcome> {
  const body = await prepareJson(deps.transport, { events: batch });
  let last = 'no attempt was made';
  for (let attempt = 1; attempt <= deps.retry.maxAttempts; attempt++) {
    if (signal?.aborted) break;
    const answer = await exchange(deps.transport, { method: 'POST', path: '/v1/events', body, ...(signal ? { signal } : {}) });
    let asked: number | undefined;
    if (answer.kind === 'network') {
      last = `network error: ${answer.error.message}`;
    } else {
      const { status, headers, body: json } = answer;
      asked = serverDelayMs(deps.retry, headers, deps.now());
      if (status >= 200 && status < 300 && isReceipt(json)) {
        const rejected = rejectionsOf(batch, new Set(json.eventIds), json.errors);
        const overQuota = rejected.filter((r) => r.code === 'quota_exceeded');
        if (overQuota.length > 0) {
          return {
            kind: 'quota',
            accepted: json.accepted,
            rejected: rejected.filter((r) => r.code !== 'quota_exceeded'),
            unsent: overQuota.map((r) => r.event),
            error: new QuotaExceededError(quotaOf(undefined, headers), undefined, overQuota.length),
          };
        }
        return { kind: 'delivered', accepted: json.accepted, rejected, ...(asked !== undefined ? { rateLimitWaitMs: asked } : {}) };
      }
      const problem = asRecord(json);
      if (status === 402) {
        return { kind: 'quota', accepted: 0, rejected: [], unsent: batch, error: new QuotaExceededError(quotaOf(problem, headers), problem, batch.length) };
      }
      if (status === 400 && Array.isArray(problem?.errors) && problem.errors.some((e) => typeof (e as { index?: unknown }).index === 'number')) {
        return { kind: 'delivered', accepted: 0, rejected: rejectionsOf(batch, new Set(), problem.errors as Receipt['errors']) };
      }
      if (!(status >= 200 && status < 300) && !RETRY_STATUSES.has(status)) {
        const errors = Array.isArray(problem?.errors) ? (problem.errors as FieldError[]) : [];
        const detail = typeof problem?.detail === 'string' ? `: ${problem.detail}` : '';
        return {
          kind: 'failed',
          error: new IngestClientError('request_refused', `the API refused the batch with ${status}${detail}`, {
            status,
            errors,
            ...(problem ? { problem } : {}),
            eventCount: batch.length,
            events: batch,
          }),
        };
      }
      last = status >= 200 && status < 300 ? `answer ${status} is not a receipt` : `answer ${status}`;
    }
    if (attempt === deps.retry.maxAttempts) break;
    deps.onRetry();
    await deps.sleep(Math.max(asked ?? 0, backoffMs(deps.retry, attempt, deps.random)));
  }
  return {
    kind: 'failed',
    error: new IngestClientError('retries_exhausted', `gave up a batch of ${batch.length} events after ${deps.retry.maxAttempts} attempts; last: ${last}`, {
      retryable: true,
      eventCount: batch.length,
      events: batch,
    }),
  };
}

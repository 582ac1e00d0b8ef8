import { MAX_EVENTS_PER_BULK } from '@ingest/schemas/ingest-event';
import { v7 as uuidv7 } from 'uuid';
import type { SenderDeps } from './batch.sender.js';
import { type FieldError, IngestClientError, QuotaExceededError } from './errors.js';
import { checkEvent } from './event.check.js';
import type { QueuedEvent, TrackEvent } from './event.types.js';
import { exchange, type PreparedBody, prepareJson, type TransportOptions } from './http.transport.js';
import { backoffMs, serverDelayMs } from './retry.policy.js';

/**
 * Backfills: `POST /v1/events/bulk` and `POST /v1/backfill/csv` create a job; the client sends
 * an `Idempotency-Key` (made once per call, the same on every retry: a retry after a lost answer
 * gets the first job's receipt instead of a second job), then polls `GET /v1/jobs/{jobId}` and
 * reports each change of progress until the job is completed or failed.
 */
export interface JobStatus {
  jobId: string;
  source: 'bulk' | 'csv';
  status: 'queued' | 'processing' | 'completed' | 'failed';
  totalEvents: number;
  processed: number;
  accepted: number;
  rejected: number;
  duplicates: number;
  /** The first 100 per-event errors (CSV: with `row` and `column`). */
  errors: (FieldError & { row?: number; column?: string })[];
  errorsTotal?: number;
  failureReason?: string;
  createdAt: string;
  completedAt: string | null;
}

export interface JobOptions {
  /** Default: a UUIDv7 made for this call. Pass your own to make the call safe across process restarts. */
  idempotencyKey?: string;
  /** Called with the job's status each time its progress changes. */
  onProgress?: (status: JobStatus) => void;
  /** `false`: resolve with the job as queued, without polling. Default true. */
  wait?: boolean;
  /** Between polls. Default 1,000 ms. */
  pollIntervalMs?: number;
  /** Polling gives up (`job_failed`) after this long. Default 10 min. */
  maxWaitMs?: number;
}

export interface CsvOptions extends JobOptions {
  /** The file part's name. Default `events.csv`. */
  filename?: string;
  /** IANA zone for timestamps without one (the API's `timezone` form field). */
  timezone?: string;
  /** `comma`, `semicolon` or `tab` (the API's `delimiter` form field); default: detected. */
  delimiter?: 'comma' | 'semicolon' | 'tab';
  /** Gzip the file before it is sent (the API inflates `.gz` parts). Default true. */
  gzip?: boolean;
}

export type CsvSource = Blob | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>;

export interface JobDeps extends SenderDeps {
  /** Deadline of an upload (the body may be up to 50 MB). */
  uploadTimeoutMs: number;
}

/** The most the API takes in one CSV upload; a stream is read (and kept, for retries) up to this. */
const MAX_CSV_BYTES = 50 * 1024 * 1024;

type Request = { method: 'GET' | 'POST'; path: string; body?: PreparedBody; headers?: Record<string, string> };

/** One API call with the batch sender's retry policy (network errors, 408, 429, 5xx); a settled answer or an error. */
async function call(deps: JobDeps, transport: TransportOptions, request: Request, what: string): Promise<{ status: number; body: unknown }> {
  let last = '';
  for (let attempt = 1; attempt <= deps.retry.maxAttempts; attempt++) {
    const answer = await exchange(transport, request);
    let asked: number | undefined;
    if (answer.kind === 'network') last = answer.error.message;
    else {
      const problem = typeof answer.body === 'object' && answer.body !== null ? (answer.body as Record<string, unknown>) : undefined;
      if (answer.status === 402) {
        const num = (v: unknown) => (typeof v === 'number' ? v : undefined);
        const quota = {
          limit: num(problem?.limit),
          used: num(problem?.used),
          remaining: num(problem?.remaining),
          resetsAt: problem?.resetsAt as string | undefined,
        };
        throw new QuotaExceededError(Object.fromEntries(Object.entries(quota).filter(([, v]) => v !== undefined)), problem, 0);
      }
      if (answer.status < 400 && answer.body !== undefined) return { status: answer.status, body: answer.body };
      if (answer.status >= 400 && ![408, 429, 500, 502, 503, 504].includes(answer.status)) {
        throw new IngestClientError(
          'request_refused',
          `${what}: the API answered ${answer.status}${typeof problem?.detail === 'string' ? `: ${problem.detail}` : ''}`,
          {
            status: answer.status,
            errors: Array.isArray(problem?.errors) ? (problem.errors as FieldError[]) : [],
            ...(problem ? { problem } : {}),
          },
        );
      }
      last = `answer ${answer.status}`;
      asked = serverDelayMs(deps.retry, answer.headers, deps.now());
    }
    if (attempt < deps.retry.maxAttempts) {
      deps.onRetry();
      await deps.sleep(Math.max(asked ?? 0, backoffMs(deps.retry, attempt, deps.random)));
    }
  }
  throw new IngestClientError('retries_exhausted', `${what}: gave up after ${deps.retry.maxAttempts} attempts; last: ${last}`, { retryable: true });
}

async function pollJob(deps: JobDeps, jobId: string, options: JobOptions): Promise<JobStatus> {
  const deadline = deps.now() + (options.maxWaitMs ?? 600_000);
  let seen = '';
  for (;;) {
    const { body } = await call(deps, deps.transport, { method: 'GET', path: `/v1/jobs/${encodeURIComponent(jobId)}` }, `job ${jobId}`);
    const status = body as JobStatus;
    const progress = `${status.status}:${status.processed}`;
    if (progress !== seen) {
      seen = progress;
      options.onProgress?.(status);
    }
    if (status.status === 'completed' || status.status === 'failed') return status;
    if (deps.now() > deadline)
      throw new IngestClientError('job_failed', `job ${jobId} was still ${status.status} after ${options.maxWaitMs ?? 600_000} ms of polling`);
    await deps.sleep(options.pollIntervalMs ?? 1_000);
  }
}

async function startJob(deps: JobDeps, transport: TransportOptions, request: Request, options: JobOptions, what: string): Promise<JobStatus> {
  const key = options.idempotencyKey ?? uuidv7();
  const { body } = await call(deps, transport, { ...request, headers: { ...request.headers, 'idempotency-key': key } }, what);
  const receipt = body as { jobId: string; totalEvents: number; status: 'queued' };
  if (typeof receipt.jobId !== 'string') throw new IngestClientError('request_refused', `${what}: the answer has no jobId`);
  if (options.wait === false) {
    const now = new Date().toISOString();
    return {
      ...receipt,
      source: request.path.includes('csv') ? 'csv' : 'bulk',
      processed: 0,
      accepted: 0,
      rejected: 0,
      duplicates: 0,
      errors: [],
      createdAt: now,
      completedAt: null,
    };
  }
  return pollJob(deps, receipt.jobId, options);
}

/** Up to 10,000 events as one job. Every event is checked first (a bad one refuses the call, with its index); ids are set as track() sets them. */
export async function bulk(deps: JobDeps, events: readonly TrackEvent[], options: JobOptions = {}): Promise<JobStatus> {
  if (events.length === 0 || events.length > MAX_EVENTS_PER_BULK) {
    throw new IngestClientError('invalid_event', `bulk() takes 1 to ${MAX_EVENTS_PER_BULK} events, got ${events.length}`, {
      errors: [{ field: '/events', code: events.length === 0 ? 'too_few_items' : 'too_many_items', message: `1 to ${MAX_EVENTS_PER_BULK} events` }],
    });
  }
  const now = deps.now();
  const errors = events.flatMap((e, index) => checkEvent(e, now).map((err) => ({ ...err, index })));
  if (errors.length > 0) {
    throw new IngestClientError('invalid_event', `${new Set(errors.map((e) => e.index)).size} of the ${events.length} events break the API's rules`, {
      status: 400,
      errors: errors.slice(0, 100),
      eventCount: events.length,
    });
  }
  const withIds: QueuedEvent[] = events.map((e) => ({ ...e, eventId: e.eventId ?? uuidv7() }));
  const body = await prepareJson(deps.transport, { events: withIds });
  return startJob(deps, { ...deps.transport, timeoutMs: deps.uploadTimeoutMs }, { method: 'POST', path: '/v1/events/bulk', body }, options, 'bulk');
}

/** The source as a Blob (replayable on a retry). A stream is read into memory, at most the API's 50 MB. */
async function asBlob(source: CsvSource): Promise<Blob> {
  if (source instanceof Blob) return source;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const iterable = Symbol.asyncIterator in source ? source : streamChunks(source);
  for await (const chunk of iterable) {
    size += chunk.byteLength;
    if (size > MAX_CSV_BYTES) throw new IngestClientError('request_refused', `the CSV is larger than the API's ${MAX_CSV_BYTES} bytes`, { status: 413 });
    chunks.push(chunk);
  }
  return new Blob(chunks as Uint8Array<ArrayBuffer>[]);
}

async function* streamChunks(stream: ReadableStream<Uint8Array>): AsyncIterable<Uint8Array> {
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    yield value;
  }
}

/** A CSV file as one job. In Node, pass `await fs.openAsBlob(path)`: a file-backed Blob is sent (and re-sent) without being held in memory. */
export async function uploadCsv(deps: JobDeps, source: CsvSource, options: CsvOptions = {}): Promise<JobStatus> {
  let file = await asBlob(source);
  let filename = options.filename ?? 'events.csv';
  if (options.gzip !== false) {
    // Streamed through gzip: only the compressed file (real CSV shrinks 5 to 50 times) is held.
    file = await new Response(file.stream().pipeThrough(new CompressionStream('gzip'))).blob();
    filename = `${filename}.gz`;
  }
  // Built again for each attempt would be the same bytes: FormData over a Blob is replayable.
  const form = new FormData();
  if (options.delimiter) form.append('delimiter', options.delimiter);
  if (options.timezone) form.append('timezone', options.timezone);
  form.append('file', file, filename);
  return startJob(
    deps,
    { ...deps.transport, timeoutMs: deps.uploadTimeoutMs },
    { method: 'POST', path: '/v1/backfill/csv', body: { body: form } },
    options,
    'CSV upload',
  );
}

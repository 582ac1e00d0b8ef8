import { MAX_EVENTS_PER_REQUEST } from '@ingest/schemas/ingest-event';
import type { IngestClientError } from './errors.js';
import type { Rejection } from './batch.sender.js';
import { DEFAULT_RETRY, type RetryOptions } from './retry.policy.js';

/** Everything `createClient` takes; only `apiKey` and `baseUrl` are required. */
export interface ClientOptions {
  /** A secret key (`svc_live_…`) on servers; a publishable key (`svc_pub_…`) in browsers. */
  apiKey: string;
  /** Where the API is, e.g. `https://ingest.example.com`. */
  baseUrl: string;
  batch?: {
    /** Events per request, 1 to 100. Default 100. */
    maxEvents?: number;
    /** Uncompressed JSON bytes per request; an event alone larger than this is refused (`too_large`). Default 512 KiB (the API takes 1 MiB). */
    maxBytes?: number;
    /** The longest an event waits in the queue for a fuller batch. Default 2,000 ms. */
    intervalMs?: number;
  };
  queue?: {
    /** Events held (queued, not yet sent) at most. Default 10,000. */
    maxEvents?: number;
    /** When the queue is full: `wait` (track() resolves once there is room: backpressure) or `drop` (the event is counted in stats().dropped). Default `wait`. */
    whenFull?: 'wait' | 'drop';
    /** `wait` mode: callers allowed to wait at once; one more is refused with `queue_full`, so callers that never await cannot grow memory. Default 1,000. */
    maxWaiting?: number;
  };
  retry?: Partial<RetryOptions>;
  /** Deadline of one request, answer included. Default 15,000 ms. */
  timeoutMs?: number;
  /** Deadline of a bulk or CSV upload request. Default 120,000 ms. */
  uploadTimeoutMs?: number;
  /**
   * Request bodies gzipped (`gzip`) or not (`none`). Default `gzip`, except with a publishable key
   * (`svc_pub_`, browsers): gateways before this release refuse a browser's `Content-Encoding`
   * in the CORS preflight. Current gateways allow it: pass `gzip` to compress in browsers too.
   */
  compression?: 'gzip' | 'none';
  /** A batch given up (retries exhausted, or refused by the API), or sending stopped by a 402. Default: one line on console.error. */
  onError?: (error: IngestClientError) => void;
  /** Events the API rejected, each with the API's code. Default: one line on console.warn. */
  onRejected?: (rejections: Rejection[]) => void;
  /** The fetch to use (tests, proxies). Default: the global fetch. */
  fetch?: typeof fetch;
}

export interface ResolvedOptions {
  apiKey: string;
  baseUrl: string;
  maxBatchEvents: number;
  maxBatchBytes: number;
  intervalMs: number;
  maxQueueEvents: number;
  whenFull: 'wait' | 'drop';
  maxWaiting: number;
  retry: RetryOptions;
  timeoutMs: number;
  uploadTimeoutMs: number;
  compression: 'gzip' | 'none';
  onError: (error: IngestClientError) => void;
  onRejected: (rejections: Rejection[]) => void;
  fetch: typeof fetch;
}

function positive(name: string, value: number, max = Number.MAX_SAFE_INTEGER): number {
  if (!Number.isInteger(value) || value < 1 || value > max) throw new RangeError(`${name} must be an integer from 1 to ${max}, got ${value}`);
  return value;
}

export function resolveOptions(options: ClientOptions): ResolvedOptions {
  if (typeof options.apiKey !== 'string' || options.apiKey === '') throw new TypeError('apiKey is required');
  const base = new URL(options.baseUrl); // throws on a malformed URL, at construction rather than at the first send
  if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new TypeError(`baseUrl must be http(s), got ${base.protocol}`);
  const retry = { ...DEFAULT_RETRY, ...options.retry };
  positive('retry.maxAttempts', retry.maxAttempts, 100);
  return {
    apiKey: options.apiKey,
    // A trailing slash, so that the API's paths resolve under a path prefix (https://host/ingest/).
    baseUrl: base.href.endsWith('/') ? base.href : `${base.href}/`,
    maxBatchEvents: positive('batch.maxEvents', options.batch?.maxEvents ?? MAX_EVENTS_PER_REQUEST, MAX_EVENTS_PER_REQUEST),
    maxBatchBytes: positive('batch.maxBytes', options.batch?.maxBytes ?? 512 * 1024, 1024 * 1024 - 1024),
    intervalMs: positive('batch.intervalMs', options.batch?.intervalMs ?? 2_000),
    maxQueueEvents: positive('queue.maxEvents', options.queue?.maxEvents ?? 10_000),
    whenFull: options.queue?.whenFull ?? 'wait',
    maxWaiting: positive('queue.maxWaiting', options.queue?.maxWaiting ?? 1_000),
    retry,
    timeoutMs: positive('timeoutMs', options.timeoutMs ?? 15_000),
    uploadTimeoutMs: positive('uploadTimeoutMs', options.uploadTimeoutMs ?? 120_000),
    compression: options.compression ?? (options.apiKey.startsWith('svc_pub_') ? 'none' : 'gzip'),
    onError: options.onError ?? ((e) => console.error(`@ingest/client: ${e.code}: ${e.message}`)),
    onRejected:
      options.onRejected ??
      ((r) => console.warn(`@ingest/client: the API rejected ${r.length} event(s): ${[...new Set(r.map((x) => `${x.field ?? ''} ${x.code}`))].join(', ')}`)),
    fetch: options.fetch ?? globalThis.fetch.bind(globalThis),
  };
}

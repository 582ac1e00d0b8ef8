export { createBrowserClient } from './browser.js';
export { createClient, IngestClient, type ClientStats, type TrackResult } from './client.js';
export type { ClientOptions } from './client.options.js';
export type { Rejection } from './batch.sender.js';
export { IngestClientError, QuotaExceededError, type ClientErrorCode, type FieldError, type QuotaInfo } from './errors.js';
export type { QueuedEvent, TrackEvent } from './event.types.js';
export type { RetryOptions } from './retry.policy.js';
export type { CsvOptions, CsvSource, JobOptions, JobStatus } from './jobs.js';

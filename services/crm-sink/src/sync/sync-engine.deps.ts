import type { EventRecord } from '@ingest/schemas';
import type { ConsumedMessage, DeadLetterSink, Logger } from '@ingest/platform';
import type { CredentialOpener, CrmCredential, MappingReader, PlannedOperation, StoredCrmCredential, SyncStateStore } from '@ingest/domain';
import type { CrmAdapter } from '../adapters/adapter.js';
import type { ParkingSettings } from '../park/park.writer.js';
import type { RateLimit } from '../rate/account-limiter.js';
import type { RetryPolicy } from '../retry/crm-call.retry.js';
import type { FlushEvent } from './flush.executor.js';
import type { PendingLinksStore } from './pending-links.store.js';
import type { RecordStateStore } from './record-state.store.js';
import type { SyncHealthRecorder } from './sync-health.recorder.js';
import type { SyncMetrics } from './sync.metrics.js';

/**
 * What the sync engine (sync.engine.ts) is given and what its parts share: the events it takes,
 * its dependencies, and the logger, clock and stop signal of one engine. In a file of their own
 * so the engine's parts (planner, account workers, flush runner, parked replay) can name the
 * fields they use without importing the engine.
 */
export interface SinkEvent {
  record: EventRecord;
  message: ConsumedMessage;
  /** Called once the event's outcome is durable. */
  finish(): void;
}

/** An event planned and held by the engine until its outcome is recorded. */
export interface PendingEvent extends FlushEvent {
  sink: SinkEvent;
  /** Arrival order in this engine: parked events keep it. */
  seq: number;
}

export interface PlannedEvent {
  pending: PendingEvent;
  ops: PlannedOperation[];
}

export interface SyncEngineDeps {
  mappings: MappingReader;
  /** Decrypts a stored credential (crm-sink's private keys); throws AppError with a dead-letter code. */
  openCredential: CredentialOpener;
  /** `stored`: the record the credential was opened from (an OAuth credential's tokens are keyed on it). */
  createAdapter: (credential: CrmCredential, stored: StoredCrmCredential) => CrmAdapter;
  store: RecordStateStore;
  /** Links waiting for their company (pending-links.store.ts). */
  pendingLinks?: PendingLinksStore;
  syncStates: SyncStateStore;
  deadLetters: DeadLetterSink;
  logger: Logger;
  metrics: SyncMetrics;
  /** The accounts' sync health (states after flushes and parks); without it none is kept. */
  health?: SyncHealthRecorder;
  coalesceWindowMs: number;
  coalesceMaxRecords: number;
  rate: RateLimit;
  retry: RetryPolicy;
  /** The account's shared token bucket (Redis); without it each instance keeps its own. */
  tokenBucketOf?: (accountId: string) => () => Promise<number>;
  /** Without it, a blocked account waits in memory (holding its partitions' offsets). */
  parking?: ParkingSettings;
  /** From the control plane: true while the account is suspended (its sync is held). Only used with `parking`. */
  accountSuspended?: (accountId: string) => boolean;
  /** Erasure (docs/erasure.md): a parked event of an erased person or company is dropped when resumed. */
  erased?: (record: EventRecord) => boolean;
  now?: () => number;
}

/** One engine's logger (component crm-sync), clock, and the signal its stop() aborts. */
export interface SyncRuntime {
  log: Logger;
  now: () => number;
  signal: AbortSignal;
}

import type { JobChunk, JobChunkItem, JobMessage, JobStatus } from '@ingest/schemas';
import { type Account, type JobStatusStore, queuedJobStatus } from '@ingest/domain';
import { AppError, type OutgoingMessage, type Producer } from '@ingest/platform';
import { v7 as uuidv7 } from 'uuid';
import { chunkItems } from './chunking.js';

/**
 * Writes bulk and CSV jobs to `jobs.chunks`: chunks of up to 500 events, then one `sealed`
 * message (or `aborted` when the upload fails half way), all keyed by jobId so the job runner
 * reads them in order. The job is queued, and visible, only once it is sealed.
 */
export interface OpenJob {
  readonly jobId: string;
  /**
   * The job's time of receipt, fixed when it is opened: every chunk carries it, so every event of
   * the job has one received_at, and the allowance charges the job in that time's period.
   */
  readonly receivedAtMs: number;
  /** Durable in Kafka once resolved. */
  writeChunk(items: JobChunkItem[]): Promise<void>;
  /** Durable; the job is queued and its status readable. */
  seal(totalEvents: number): Promise<JobStatus>;
  /** Best effort: the runner also drops chunks that are never sealed. */
  abort(reason: string): Promise<void>;
}

export interface JobWriter {
  open(account: Account, source: 'bulk' | 'csv'): OpenJob;
  /** The whole job: chunks, then its queued status, then the seal. */
  writeWhole(account: Account, source: 'bulk' | 'csv', items: JobChunkItem[]): Promise<JobStatus>;
}

export interface JobWriterDeps {
  producer: Producer;
  chunksTopic: string;
  statusStore: JobStatusStore;
  now?: () => number;
}

export function createJobWriter(deps: JobWriterDeps): JobWriter {
  const now = deps.now ?? Date.now;
  const message = (m: JobMessage): OutgoingMessage => ({ key: m.jobId, value: JSON.stringify(m) });

  /**
   * The queued status is written before the seal: once sealed, the runner may finish the job at
   * once, and its status must never be overwritten by a late `queued`. A seal that fails after
   * the status marks the job failed (a seal that did land makes the runner overwrite that).
   */
  async function sealWithStatus(status: JobStatus, seal: OutgoingMessage): Promise<void> {
    await deps.statusStore.put(status);
    try {
      await deps.producer.send(deps.chunksTopic, [seal]);
    } catch (err) {
      // A seal of unknown outcome may have landed: the runner then runs the job, or, if it did
      // not, abandons the unsealed job and marks it failed itself. Writing `failed` here could
      // overwrite the runner's `completed`.
      if (!(err instanceof AppError && err.code === 'kafka_outcome_unknown')) {
        await deps.statusStore.put({ ...status, status: 'failed', failureReason: 'the job could not be queued' }).catch(() => undefined);
      }
      throw err;
    }
  }

  /**
   * Chunks of a job that is not sealed yet: whatever became of them, the job cannot run without
   * its seal, so a send of unknown outcome still means "nothing was queued".
   */
  async function sendUnsealed(messages: OutgoingMessage[]): Promise<void> {
    try {
      await deps.producer.send(deps.chunksTopic, messages);
    } catch (err) {
      if (err instanceof AppError && err.code === 'kafka_outcome_unknown') {
        throw new AppError('kafka_unavailable', `job chunks not confirmed; the job is not sealed, so nothing was queued: ${err.message}`, {
          retryable: true,
          cause: err,
        });
      }
      throw err;
    }
  }

  function open(account: Account, source: 'bulk' | 'csv'): OpenJob {
    const jobId = uuidv7();
    const receivedAtMs = now();
    const base = { v: 1 as const, jobId, accountId: account.id, source };
    let seq = 0;
    return {
      jobId,
      receivedAtMs,
      async writeChunk(items) {
        const chunks = chunkItems(items).map((c): JobChunk => ({ ...base, type: 'chunk', seq: seq++, receivedAtMs, items: c }));
        await sendUnsealed(chunks.map(message));
      },
      async seal(totalEvents) {
        const status = queuedJobStatus({ jobId, accountId: account.id, source, totalEvents, atMs: now() });
        await sealWithStatus(status, message({ ...base, type: 'sealed', chunks: seq, totalEvents, receivedAtMs }));
        return status;
      },
      async abort(reason) {
        await deps.producer.send(deps.chunksTopic, [message({ ...base, type: 'aborted', reason })]);
      },
    };
  }

  return {
    open,
    async writeWhole(account, source, items) {
      const job = open(account, source);
      await job.writeChunk(items);
      return job.seal(items.length);
    },
  };
}

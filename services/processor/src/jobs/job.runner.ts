import type { JobMessage, JobStatus } from '@ingest/schemas';
import {
  type BatchConsumer,
  type BatchContext,
  type ConsumedMessage,
  createStageConsumer,
  type DeadLetterSink,
  interrupted,
  type KafkaClient,
  type Logger,
  ok,
  type Producer,
  type Registry,
  type StageResult,
} from '@ingest/platform';
import { type JobStatusStore } from '@ingest/domain';
import { createJobExecutor, createRawEventsOutput } from './job.executor.js';
import { createJobMetrics } from './job.metrics.js';
import { ABANDON_REASONS, type AbandonedJob, JobBufferBudget, PartitionJobs } from './job-buffers.js';
import { abandonedStatus, isFinal } from './job-status.transitions.js';
import { createJobMessageDecoder } from './job-message.decode.js';
import type { ValidateEvent } from './job-tally.js';

export const DEFAULT_SEAL_TIMEOUT_MS = 10 * 60 * 1000;
/** Bytes of unsealed jobs' chunks one runner holds, all partitions together. */
export const DEFAULT_BUFFER_MAX_BYTES = 256 * 1024 * 1024;
/** ... and per partition: more than the largest job the gateway accepts (a 50 MB CSV). */
export const DEFAULT_BUFFER_MAX_BYTES_PER_PARTITION = 96 * 1024 * 1024;

export interface JobRunnerDeps {
  kafka: KafkaClient;
  producer: Producer;
  /** jobs.chunks */
  chunksTopic: string;
  /** events.raw: where accepted job events are written. */
  rawTopic: string;
  deadLetters: DeadLetterSink;
  statusStore: JobStatusStore;
  groupId: string;
  logger: Logger;
  metrics: Registry;
  /** From createEventValidator: the same rules as POST /v1/events. */
  validate: ValidateEvent;
  now: () => number;
  /** A job with no new chunk for this long (Kafka time) and no seal is dropped. Default 10 min. */
  sealTimeoutMs?: number;
  /** Bytes of unsealed jobs held, in total and per partition; past them the idlest job is given up. */
  bufferMaxBytes?: number;
  bufferMaxBytesPerPartition?: number;
  /**
   * Called once a job has its final status (completed or failed) stored, before the offsets
   * past it are committed. At least once per job: it is called again when a finished job is
   * read again after a restart, so it must be idempotent by jobId. A throw is retried.
   */
  onJobFinished?(status: JobStatus, receivedAtMs: number): Promise<void>;
  /**
   * Called for a job that will never run: aborted by the gateway, or given up without a seal.
   * At least once (a failure throws the batch, which is read again from the committed offset),
   * so it must be idempotent by jobId.
   */
  onJobDropped?(job: { accountId: string; jobId: string; receivedAtMs: number }): Promise<void>;
  /** Jobs of a suspended account fail with `account_suspended` instead of running (job.executor.ts). */
  accountSuspended?(accountId: string): boolean;
  partitionsConsumedConcurrently?: number;
}

/**
 * jobs.chunks -> events.raw, with live progress in the job status store.
 *
 * A job's chunks are held in memory until its seal arrives (same partition, later offset);
 * then the job runs chunk by chunk (see job.executor.ts). The committed offset of a partition
 * never passes the first chunk of a job that is not finished, so after a restart the partition
 * is re-read from there and the buffers are rebuilt exactly; finished jobs met again on the
 * way are skipped by their stored status. Poison messages are dead-lettered with a code and a
 * reason and never hold the partition.
 */
export function createJobRunner(deps: JobRunnerDeps): BatchConsumer {
  const sealTimeoutMs = deps.sealTimeoutMs ?? DEFAULT_SEAL_TIMEOUT_MS;
  const maxBytesPerPartition = deps.bufferMaxBytesPerPartition ?? DEFAULT_BUFFER_MAX_BYTES_PER_PARTITION;
  const budget = new JobBufferBudget(deps.bufferMaxBytes ?? DEFAULT_BUFFER_MAX_BYTES);
  const log = deps.logger.child({ component: 'job-runner' });
  const decode = createJobMessageDecoder();
  const metrics = createJobMetrics(deps.metrics, () => budget.used);
  const runJob = createJobExecutor({
    output: createRawEventsOutput(deps.producer, deps.rawTopic),
    statusStore: deps.statusStore,
    validate: deps.validate,
    now: deps.now,
    logger: log,
    metrics,
    ...(deps.onJobFinished ? { onJobFinished: deps.onJobFinished } : {}),
    ...(deps.accountSuspended ? { accountSuspended: deps.accountSuspended } : {}),
  });
  const partitions = new Map<string, PartitionJobs>();

  /** The state for a batch: kept when the batch continues it, rebuilt when it does not. */
  function stateFor(ctx: BatchContext, firstOffset: bigint): PartitionJobs {
    const key = `${ctx.topic}:${ctx.partition}`;
    const current = partitions.get(key);
    if (current?.continuesAt(firstOffset)) return current;
    if (current && current.size > 0) {
      log.info(
        { partition: ctx.partition, offset: firstOffset.toString(), pendingJobs: current.size },
        'partition re-read from another offset; rebuilding its job buffers',
      );
    }
    current?.release();
    const fresh = new PartitionJobs({ sealTimeoutMs, maxBytes: maxBytesPerPartition, budget });
    partitions.set(key, fresh);
    return fresh;
  }

  function forget(ctx: BatchContext): void {
    const key = `${ctx.topic}:${ctx.partition}`;
    partitions.get(key)?.release();
    partitions.delete(key);
  }

  /**
   * A job given up before its seal gets a `failed` status with the reason, unless it has a
   * final one already (a job re-read after a restart may have finished on the first read).
   * Best effort: the job fails at its seal anyway, and the client of an upload that never
   * ended has no job id to ask about.
   */
  async function reportAbandoned(abandoned: AbandonedJob[]): Promise<void> {
    for (const { job, reason } of abandoned) {
      metrics.abandoned.inc({ source: job.source, reason });
      const fields = { jobId: job.jobId, accountId: job.accountId, chunks: job.chunks.size, bytes: job.bytes, reason };
      log.warn({ ...fields, sealTimeoutMs }, ABANDON_REASONS[reason]);
      // Not best effort: a reservation that is never given back is charged for good. A throw
      // fails the batch; the partition is read again from the committed offset (before the
      // job's first chunk), so the job is given up, and given back, again.
      await deps.onJobDropped?.(job);
      try {
        if (isFinal(await deps.statusStore.get(job.jobId))) continue;
        const items = [...job.chunks.values()].reduce((n, c) => n + c.items.length, 0);
        await deps.statusStore.put(abandonedStatus(job, items, ABANDON_REASONS[reason], new Date(deps.now()).toISOString()));
      } catch (err) {
        log.warn({ err, jobId: job.jobId }, 'could not store the failed status of an abandoned job');
      }
    }
  }

  return createStageConsumer<JobMessage>(deps, {
    name: 'job-runner',
    stage: 'jobs',
    outcomes: ['ok', 'dead_letter'],
    topics: [deps.chunksTopic],
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently ?? 1,
    // A chunk message may be up to the topic's 8 MiB; a fetch must be able to hold one.
    maxBytesPerPartition: 10 * 1024 * 1024,
    decode(message) {
      const decoded = decode(message.value);
      return decoded.ok ? { ok: true, record: decoded.message } : decoded;
    },
    open(messages, ctx) {
      const first = messages[0];
      if (!first) return null;
      const state = stateFor(ctx, BigInt(first.offset));
      let newestMs = state.newestMs;

      /**
       * Stopping, or the partition moved: commit nothing and forget the partition. Whoever reads
       * it next (this member after a restart, or another one) starts from the committed offset,
       * which is at or before every job this state held.
       */
      function stopEarly(): StageResult {
        forget(ctx);
        return interrupted();
      }

      /** A message is a chunk, seal or abort; the job's events are counted as accepted/rejected. */
      async function step(job: JobMessage, message: ConsumedMessage): Promise<StageResult> {
        if (!ctx.shouldContinue()) return stopEarly();
        const offset = BigInt(message.offset);
        newestMs = Math.max(newestMs, message.timestamp);
        if (job.type === 'chunk') {
          await reportAbandoned(state.addChunk(offset, message.timestamp, job, message.value?.length ?? 0));
        } else if (job.type === 'aborted') {
          const aborted = state.get(job.jobId);
          // Before removing: a failure here leaves the job to be dropped again when re-read.
          if (aborted) await deps.onJobDropped?.(aborted);
          const dropped = state.remove(job.jobId);
          log.info({ jobId: job.jobId, accountId: job.accountId, chunks: dropped?.chunks.size ?? 0 }, 'job aborted; its chunks are dropped');
        } else {
          const chunks = state.get(job.jobId)?.chunks ?? new Map();
          const abandoned = state.abandonedReason(job.jobId);
          // The job stays buffered while it runs: an interruption or a throw leaves it re-readable.
          state.setRunning(job.jobId, true);
          let outcome: Awaited<ReturnType<typeof runJob>>;
          try {
            outcome = await runJob(job, chunks, ctx, abandoned ? ABANDON_REASONS[abandoned] : undefined);
          } finally {
            state.setRunning(job.jobId, false);
          }
          if (outcome === 'interrupted') return stopEarly();
          state.remove(job.jobId);
        }
        // After the message: a seal arriving late still finds its chunks.
        await expireIdle();
        return ok();
      }

      const expireIdle = () => reportAbandoned(state.expire(newestMs).map((job) => ({ job, reason: 'idle' as const })));

      return {
        step,
        // Dead letters are durable: commit up to the first chunk of the oldest unfinished job.
        async end({ deadLettered }) {
          // A dead-lettered message's Kafka time counts too, as if it had been a chunk.
          if (deadLettered.length > 0) {
            newestMs = deadLettered.reduce((max, l) => Math.max(max, l.message.timestamp), newestMs);
            await expireIdle();
          }
          state.endBatch(BigInt(messages.at(-1)?.offset ?? first.offset) + 1n, newestMs);
          const commit = state.commitOffset();
          return commit === undefined ? {} : { commitOffset: commit.toString() };
        },
      };
    },
  });
}

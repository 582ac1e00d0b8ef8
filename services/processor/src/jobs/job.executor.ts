import type { EventRecord, JobChunk, JobSealed, JobStatus } from '@ingest/schemas';
import { type JobStatusStore, rawEventMessage } from '@ingest/domain';
import { type Logger, type Producer } from '@ingest/platform';
import type { JobMetrics } from './job.metrics.js';
import { baseStatus, checkComplete, completedStatus, failedStatus, isFinal, processingStatus } from './job-status.transitions.js';
import { JobTally, type ValidateEvent } from './job-tally.js';

/** Where a job's accepted events go: `events.raw`, like the events of POST /v1/events. */
export interface RawEventsOutput {
  /** Durable (acks=all) once resolved; one produce request per call. */
  write(records: EventRecord[]): Promise<void>;
}

export function createRawEventsOutput(producer: Producer, rawTopic: string): RawEventsOutput {
  return {
    write: (records) => producer.send(rawTopic, records.map(rawEventMessage)),
  };
}

export interface JobExecutorDeps {
  output: RawEventsOutput;
  statusStore: JobStatusStore;
  validate: ValidateEvent;
  now: () => number;
  logger: Logger;
  metrics: JobMetrics;
  onJobFinished?: (status: JobStatus, receivedAtMs: number) => Promise<void>;
  /** The account was suspended (issue 17): a job of it is not started, and one running stops before its next chunk. */
  accountSuspended?: (accountId: string) => boolean;
}

/** `failureReason` of a job stopped because its account was suspended. */
export const ACCOUNT_SUSPENDED_REASON = 'account_suspended';

export interface JobControl {
  /** False once the consumer stops or loses the partition: leave the job unfinished. */
  shouldContinue(): boolean;
  heartbeat(): Promise<void>;
}

/** `interrupted`: the job is not finished and must stay re-readable. */
export type JobRunOutcome = 'finished' | 'interrupted';

/**
 * Runs one sealed job from its first chunk. Throws on infrastructure failures (Kafka, Redis),
 * leaving the job unfinished: it is run again, from its first chunk and with counts from zero,
 * when its seal is read again. Its events are then written again, which the (account, eventId)
 * dedupe downstream absorbs.
 */
export function createJobExecutor(
  deps: JobExecutorDeps,
): (sealed: JobSealed, chunks: ReadonlyMap<number, JobChunk>, control: JobControl, abandonedReason?: string) => Promise<JobRunOutcome> {
  const iso = (ms: number) => new Date(ms).toISOString();

  /** `rejectionCodes`: the job's rejected events by the code of their first error. */
  async function finished(status: JobStatus, receivedAtMs: number, startMs: number, rejectionCodes: ReadonlyMap<string, number> = new Map()): Promise<void> {
    const labels = { source: status.source, status: status.status };
    deps.metrics.finished.inc(labels);
    deps.metrics.duration.observe(labels, Math.max(0, deps.now() - startMs) / 1000);
    deps.metrics.events.inc({ source: status.source, outcome: 'accepted' }, status.accepted);
    deps.metrics.events.inc({ source: status.source, outcome: 'rejected' }, status.rejected);
    deps.metrics.events.inc({ source: status.source, outcome: 'duplicate' }, status.duplicates);
    deps.metrics.outcomes.accepted.inc({ source: status.source }, status.accepted);
    for (const [code, n] of rejectionCodes) deps.metrics.outcomes.rejected.inc({ source: status.source, code }, n);
    await deps.onJobFinished?.(status, receivedAtMs);
  }

  return async (sealed, chunks, control, abandonedReason) => {
    const log = deps.logger.child({ jobId: sealed.jobId, accountId: sealed.accountId, source: sealed.source });
    const stored = await deps.statusStore.get(sealed.jobId);
    if (isFinal(stored)) {
      // Re-read after a restart, behind an older unfinished job: done already. The hook is
      // called again (at least once per job), in case the previous run died right before it.
      log.debug({ status: stored.status }, 'job already finished; skipped');
      await deps.onJobFinished?.(stored, sealed.receivedAtMs);
      return 'finished';
    }

    const startMs = deps.now();
    const base = baseStatus(stored, sealed);
    // Its chunks were given up before the seal came (job-buffers.ts): it cannot run.
    const refusal = abandonedReason ?? (deps.accountSuspended?.(sealed.accountId) ? ACCOUNT_SUSPENDED_REASON : undefined);
    const complete = refusal === undefined ? checkComplete(sealed, chunks, base.totalEvents) : ({ ok: false, reason: refusal } as const);
    if (!complete.ok) {
      const status = failedStatus(base, complete.reason, iso(startMs));
      await deps.statusStore.put(status);
      log.warn({ reason: complete.reason, totalEvents: base.totalEvents }, 'job failed');
      await finished(status, sealed.receivedAtMs, startMs);
      return 'finished';
    }

    const startedAt = base.startedAt ?? iso(startMs);
    const tally = new JobTally({ jobId: sealed.jobId, accountId: sealed.accountId, source: sealed.source }, deps.validate);
    await deps.statusStore.put(processingStatus(base, tally.counts(), startedAt, iso(startMs)));
    log.info({ totalEvents: base.totalEvents, chunks: complete.chunks.length, rerun: stored?.status === 'processing' }, 'job started');

    for (const [i, chunk] of complete.chunks.entries()) {
      if (!control.shouldContinue()) {
        log.info({ processed: tally.counts().processed }, 'job interrupted; it runs again from its first chunk');
        return 'interrupted';
      }
      if (deps.accountSuspended?.(sealed.accountId)) {
        // The chunks written so far stay written (and are counted by the reconciler like any
        // stored event); the status says how far it got.
        const status: JobStatus = { ...failedStatus(base, ACCOUNT_SUSPENDED_REASON, iso(deps.now())), ...tally.counts() };
        await deps.statusStore.put(status);
        log.warn({ processed: status.processed }, 'job stopped: its account is suspended');
        await finished(status, sealed.receivedAtMs, startMs);
        return 'finished';
      }
      await deps.output.write(tally.addChunk(chunk));
      // The last chunk's counts go out with the final status.
      if (i < complete.chunks.length - 1) await deps.statusStore.put(processingStatus(base, tally.counts(), startedAt, iso(deps.now())));
      await control.heartbeat();
    }

    const status = completedStatus(base, tally.counts(), startedAt, iso(deps.now()));
    await deps.statusStore.put(status);
    const { processed, accepted, rejected, duplicates } = status;
    log.info({ totalEvents: status.totalEvents, processed, accepted, rejected, duplicates, durationMs: deps.now() - startMs }, 'job completed');
    await finished(status, sealed.receivedAtMs, startMs, tally.rejectionCodes());
    return 'finished';
  };
}

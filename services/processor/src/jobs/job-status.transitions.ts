import type { JobChunk, JobSealed, JobStatus } from '@ingest/schemas';
import { queuedJobStatus } from '@ingest/domain';
import type { JobCounts } from './job-tally.js';

/**
 * The status a job goes through: queued (written by the gateway when it seals) -> processing
 * -> completed or failed. Pure builders; the runner stores what they return.
 */
export function isFinal(status: JobStatus | undefined): status is JobStatus & { status: 'completed' | 'failed' } {
  return status?.status === 'completed' || status?.status === 'failed';
}

/** The gateway's queued status when there is one (its createdAt and totalEvents are kept), else one built from the seal. */
export function baseStatus(stored: JobStatus | undefined, sealed: JobSealed): JobStatus {
  if (stored) return stored;
  return queuedJobStatus({
    jobId: sealed.jobId,
    accountId: sealed.accountId,
    source: sealed.source,
    totalEvents: sealed.totalEvents,
    atMs: sealed.receivedAtMs,
  });
}

/** Counts always replace the stored ones: a re-run after a crash starts again from zero. */
export function processingStatus(base: JobStatus, counts: JobCounts, startedAt: string, now: string): JobStatus {
  const rest = withoutCounts(base);
  return { ...rest, ...counts, status: 'processing', startedAt, completedAt: null, updatedAt: now };
}

export function completedStatus(base: JobStatus, counts: JobCounts, startedAt: string, now: string): JobStatus {
  const rest = withoutCounts(base);
  return { ...rest, ...counts, status: 'completed', startedAt, completedAt: now, updatedAt: now };
}

/** Nothing of a failed job was written: its counts stay at zero. */
export function failedStatus(base: JobStatus, reason: string, now: string): JobStatus {
  return {
    ...withoutCounts(base),
    status: 'failed',
    processed: 0,
    accepted: 0,
    rejected: 0,
    duplicates: 0,
    errors: [],
    startedAt: base.startedAt ?? now,
    completedAt: now,
    updatedAt: now,
    failureReason: reason,
  };
}

/**
 * A job given up before its seal (its upload stalled, or the runner's buffer was full): failed
 * with the reason, nothing of it written; `totalEvents` counts the events received so far.
 */
export function abandonedStatus(
  job: { jobId: string; accountId: string; source: JobStatus['source'] },
  received: number,
  reason: string,
  now: string,
): JobStatus {
  const base = queuedJobStatus({ jobId: job.jobId, accountId: job.accountId, source: job.source, totalEvents: received, atMs: Date.parse(now) });
  return failedStatus(base, reason, now);
}

/** A stored status without what a new status recomputes: the reason of a failure and the error total of an earlier run. */
function withoutCounts(base: JobStatus): Omit<JobStatus, 'failureReason' | 'errorsTotal' | 'errorsTruncated'> {
  const { failureReason: _reason, errorsTotal: _total, errorsTruncated: _truncated, ...rest } = base;
  return rest;
}

export type CompletenessCheck = { ok: true; chunks: JobChunk[] } | { ok: false; reason: string };

/**
 * Whether the chunks read are exactly the job the seal describes: seqs 0..chunks-1, all of the
 * sealed job's account and source, and as many events as the status announces. Anything else
 * (chunks lost to abandonment or retention, a foreign chunk under the same id) fails the job
 * instead of reporting counts that do not add up to what the client sent.
 */
export function checkComplete(sealed: JobSealed, chunks: ReadonlyMap<number, JobChunk>, totalEvents: number): CompletenessCheck {
  if (chunks.size !== sealed.chunks) {
    return { ok: false, reason: `received ${chunks.size} of ${sealed.chunks} chunks` };
  }
  const ordered: JobChunk[] = [];
  for (let seq = 0; seq < sealed.chunks; seq += 1) {
    const chunk = chunks.get(seq);
    if (!chunk) return { ok: false, reason: `chunk ${seq} of ${sealed.chunks} is missing` };
    if (chunk.accountId !== sealed.accountId || chunk.source !== sealed.source) {
      return { ok: false, reason: `chunk ${seq} belongs to another account or source than the seal` };
    }
    ordered.push(chunk);
  }
  const items = ordered.reduce((sum, c) => sum + c.items.length, 0);
  if (items !== totalEvents) return { ok: false, reason: `the chunks hold ${items} events, the job announced ${totalEvents}` };
  return { ok: true, chunks: ordered };
}

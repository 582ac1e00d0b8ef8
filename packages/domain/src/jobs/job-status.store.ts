import { JobStatus, compileValidator } from '@ingest/schemas';
import type { Producer } from '@ingest/platform';
import { type Redis, withRedis } from '@ingest/platform';

/**
 * Where job progress lives: Redis for reads by any gateway replica, and the compacted
 * `jobs.progress` topic as the durable record (Redis can be rebuilt from it). The gateway
 * writes the `queued` status; the job runner writes every later one. Without Redis, reads and
 * writes fail with `redis_unavailable` (the API answers 503, never 500).
 */
export interface JobStatusStore {
  get(jobId: string): Promise<JobStatus | undefined>;
  put(status: JobStatus): Promise<void>;
}

/** The per-account job index (written by every put); the dashboard lists jobs with it. */
export interface AccountJobsReader {
  /** The account's jobs, newest first (by creation), at most `limit`. */
  listForAccount(accountId: string, limit: number): Promise<JobStatus[]>;
}

export interface JobStatusStoreDeps {
  redis: Redis;
  producer: Producer;
  progressTopic: string;
  ttlSeconds?: number;
  /** REDIS_KEY_PREFIX. */
  keyPrefix?: string;
}

const THIRTY_DAYS_S = 30 * 24 * 3600;

export function jobStatusKey(jobId: string, prefix = ''): string {
  return `${prefix}job:${jobId}`;
}

/** Per-account index of job ids, scored by creation time (ms). */
export function accountJobsKey(accountId: string, prefix = ''): string {
  return `${prefix}jobs:account:${accountId}`;
}

/** An account keeps its newest jobs listed; older ones stay readable by id until their TTL. */
const INDEX_MAX = 1_000;

export function createJobStatusStore(deps: JobStatusStoreDeps): JobStatusStore & AccountJobsReader {
  const ttl = deps.ttlSeconds ?? THIRTY_DAYS_S;
  const isJobStatus = compileValidator<JobStatus>(JobStatus);
  return {
    async get(jobId) {
      const raw = await withRedis('job status', deps.redis.get(jobStatusKey(jobId, deps.keyPrefix)));
      if (raw === null) return undefined;
      const parsed: unknown = JSON.parse(raw);
      return isJobStatus(parsed) ? parsed : undefined;
    },
    async put(status) {
      const value = JSON.stringify(status);
      await deps.producer.send(deps.progressTopic, [{ key: status.jobId, value }]);
      const index = accountJobsKey(status.accountId, deps.keyPrefix);
      // Every put re-adds the job with the same score: idempotent, and an index lost with Redis
      // is rebuilt by the next progress write of each live job.
      await withRedis(
        'job status',
        deps.redis
          .multi()
          .set(jobStatusKey(status.jobId, deps.keyPrefix), value, 'EX', ttl)
          .zadd(index, Date.parse(status.createdAt) || 0, status.jobId)
          .zremrangebyrank(index, 0, -(INDEX_MAX + 1))
          .expire(index, ttl)
          .exec(),
      );
    },
    async listForAccount(accountId, limit) {
      const ids = await withRedis('job list', deps.redis.zrevrange(accountJobsKey(accountId, deps.keyPrefix), 0, Math.max(0, limit - 1)));
      if (ids.length === 0) return [];
      const values = await withRedis('job list', deps.redis.mget(...ids.map((id) => jobStatusKey(id, deps.keyPrefix))));
      const jobs: JobStatus[] = [];
      for (const raw of values) {
        if (raw === null) continue;
        const parsed: unknown = JSON.parse(raw);
        // The index is per account, but the status is checked too: a job is only ever shown to its account.
        if (isJobStatus(parsed) && parsed.accountId === accountId) jobs.push(parsed);
      }
      return jobs;
    },
  };
}

/** A job's first status, written when the upload is sealed (and rebuilt from the seal if missing). */
export function queuedJobStatus(job: { jobId: string; accountId: string; source: JobStatus['source']; totalEvents: number; atMs: number }): JobStatus {
  const at = new Date(job.atMs).toISOString();
  return {
    jobId: job.jobId,
    accountId: job.accountId,
    source: job.source,
    status: 'queued',
    totalEvents: job.totalEvents,
    processed: 0,
    accepted: 0,
    rejected: 0,
    duplicates: 0,
    errors: [],
    createdAt: at,
    updatedAt: at,
    startedAt: null,
    completedAt: null,
  };
}

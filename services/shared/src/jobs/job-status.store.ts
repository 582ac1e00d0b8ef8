import { JobStatus } from '@ingest/schemas';
import { Ajv } from 'ajv';
import type { Producer } from '../kafka/producer.js';
import type { Redis } from '../redis.js';

/**
 * Where job progress lives: Redis for reads by any gateway replica, and the compacted
 * `jobs.progress` topic as the durable record (Redis can be rebuilt from it). The gateway
 * writes the `queued` status; the job runner writes every later one.
 */
export interface JobStatusStore {
  get(jobId: string): Promise<JobStatus | undefined>;
  put(status: JobStatus): Promise<void>;
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

export function createJobStatusStore(deps: JobStatusStoreDeps): JobStatusStore {
  const ttl = deps.ttlSeconds ?? THIRTY_DAYS_S;
  const isJobStatus = new Ajv({ strict: false }).compile<JobStatus>(JobStatus);
  return {
    async get(jobId) {
      const raw = await deps.redis.get(jobStatusKey(jobId, deps.keyPrefix));
      if (raw === null) return undefined;
      const parsed: unknown = JSON.parse(raw);
      return isJobStatus(parsed) ? parsed : undefined;
    },
    async put(status) {
      const value = JSON.stringify(status);
      await deps.producer.send(deps.progressTopic, [{ key: status.jobId, value }]);
      await deps.redis.set(jobStatusKey(status.jobId, deps.keyPrefix), value, 'EX', ttl);
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

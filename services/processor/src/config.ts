import { ClickHouseConfig, CommonConfig, ControlPlaneConfig, KafkaConfig, loadConfig, RedisConfig } from '@ingest/platform';
import { type Static, Type } from '@sinclair/typebox';

export const ProcessorConfigSchema = Type.Object({
  ...CommonConfig,
  ...KafkaConfig,
  ...ClickHouseConfig,
  ...RedisConfig,
  // The job runner reads the control plane: jobs of a suspended account do not run.
  ...ControlPlaneConfig,
  PROCESSOR_OPS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3101 }),
  PROCESSOR_OPS_HOST: Type.String({ default: '127.0.0.1' }),
  /**
   * Stages this instance runs, comma-separated (default all). Node runs one thread per process,
   * so on a machine with N cores, N processes with different stages (or the same) use them all.
   */
  PROCESSOR_STAGES: Type.String({ default: 'jobs,dedupe,storage', pattern: '^(jobs|dedupe|storage)(,(jobs|dedupe|storage))*$' }),
  PROCESSOR_STORAGE_GROUP: Type.String({ minLength: 1, default: 'processor-storage' }),
  PROCESSOR_DEDUPE_GROUP: Type.String({ minLength: 1, default: 'processor-dedupe' }),
  /** How long a repeated (account, eventId) is recognised after its first receipt. */
  DEDUPE_WINDOW_MS: Type.Integer({ minimum: 60_000, default: 7 * 24 * 60 * 60 * 1000 }),
  /**
   * Memory bound of dedupe: first-seen marks held per assigned partition of events.raw (about
   * 35 bytes each). When a partition holds more, its oldest marks are dropped and the window is
   * shorter for them; the idempotent sinks absorb a repeat that passes (docs/architecture.md, "Data flow").
   */
  DEDUPE_MAX_MARKS_PER_PARTITION: Type.Integer({ minimum: 1_000, default: 2_000_000 }),
  PROCESSOR_JOBS_GROUP: Type.String({ minLength: 1, default: 'processor-jobs' }),
  /** A job's chunks without a seal for this long (by Kafka timestamps) are dropped as abandoned. */
  PROCESSOR_JOB_SEAL_TIMEOUT_MS: Type.Integer({ minimum: 1_000, default: 600_000 }),
  /**
   * Bytes of chunk messages of unsealed jobs the job runner holds, all its partitions together,
   * and per partition (at least the largest job: a 50 MB CSV makes ~55 MB of chunks). Past
   * either, the job idle the longest is given up (failed, `buffer_full`). Memory is about three
   * times the bytes held.
   */
  PROCESSOR_JOB_BUFFER_MAX_BYTES: Type.Integer({ minimum: 1_048_576, default: 256 * 1024 * 1024 }),
  PROCESSOR_JOB_BUFFER_MAX_BYTES_PER_PARTITION: Type.Integer({ minimum: 1_048_576, default: 96 * 1024 * 1024 }),
  /** Same rule as the gateway's: events further in the future are rejected. */
  MAX_FUTURE_SKEW_MS: Type.Integer({ minimum: 0, default: 24 * 60 * 60 * 1000 }),
  /** How often the allowance counters are made exact from ClickHouse; 0 turns it off. */
  USAGE_RECONCILE_INTERVAL_MS: Type.Integer({ minimum: 0, default: 60_000 }),
  /** Consumer group copying the billing ledger topic into ClickHouse (with the storage stage). */
  PROCESSOR_LEDGER_GROUP: Type.String({ minLength: 1, default: 'processor-ledger' }),
  /** Consumer group copying the audit log topic (audit.log) into ClickHouse `audit_log` (with the storage stage). */
  PROCESSOR_AUDIT_GROUP: Type.String({ minLength: 1, default: 'processor-audit' }),
  /** How often ended months are checked for closing in the billing ledger; 0 turns it off. */
  BILLING_CLOSE_INTERVAL_MS: Type.Integer({ minimum: 0, default: 300_000 }),
  /** A month is closed this long after it ended, so late jobs and the pipeline can finish. */
  BILLING_CLOSE_DELAY_MS: Type.Integer({ minimum: 0, default: 3_600_000 }),
  PROCESSOR_PARTITIONS_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
  /** ClickHouse inserts: rows per insert and longest wait to fill one (freshness vs insert rate). */
  STORAGE_BATCH_MAX_ROWS: Type.Integer({ minimum: 1, default: 10_000 }),
  STORAGE_BATCH_MAX_WAIT_MS: Type.Integer({ minimum: 10, default: 1_000 }),
  /** Inserts start at least this far apart (ClickHouse wants at most ~2 a second per table); under a backlog they grow instead. */
  STORAGE_MIN_INSERT_INTERVAL_MS: Type.Integer({ minimum: 0, default: 500 }),
  /** Partitions of events.unique consumed at once per instance (all of them by default). */
  STORAGE_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 256, default: 12 }),
});

export type ProcessorConfig = Static<typeof ProcessorConfigSchema>;

export function loadProcessorConfig(env?: Record<string, string | undefined>): ProcessorConfig {
  return loadConfig(ProcessorConfigSchema, env);
}

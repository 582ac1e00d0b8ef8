import { randomBytes } from 'node:crypto';
import {
  type ClickHouse,
  type Component,
  createDeadLetterSink,
  type KafkaClient,
  type Logger,
  type Producer,
  type Redis,
  type Registry,
  topicName,
} from '@ingest/platform';
import {
  createAllowance,
  createEventValidator,
  createIdentityMapBuilder,
  createIdentityMapIndex,
  createJobStatusStore,
  type SuppressionList,
} from '@ingest/domain';
import { createAuditCopier } from './audit/audit.copier.js';
import { createLedgerCopier } from './ledger/ledger.copier.js';
import { createDedupeConsumer } from './dedupe/dedupe.consumer.js';
import { createIdentityStep } from './dedupe/identity.step.js';
import { createJobRunner } from './jobs/job.runner.js';
import { createClickHouseWriter } from './storage/clickhouse.writer.js';
import { eventsRowFormatOfLine } from '@ingest/domain';
import { createStorageConsumer } from './storage/storage.consumer.js';
import { createEventsRowFormatHolder } from './storage/events-row-format.js';
import { createErasureFilter } from './storage/erasure.filter.js';

/** The consumer groups a processor can run; each replica runs all of them unless told otherwise. */
export const PROCESSOR_STAGES = ['jobs', 'dedupe', 'storage'] as const;
export type ProcessorStage = (typeof PROCESSOR_STAGES)[number];

export interface ProcessorDeps {
  /** Which stages this instance runs (default all): dedupe and storage can scale apart. */
  stages?: readonly ProcessorStage[];
  kafka: KafkaClient;
  producer: Producer;
  ch: ClickHouse;
  redis: Redis;
  logger: Logger;
  metrics: Registry;
  topicPrefix: string;
  redisKeyPrefix?: string;
  /**
   * Consumer groups of the stages; the billing ledger's and the audit log's copies into
   * ClickHouse run with storage when `ledger` / `audit` are set.
   */
  groups: { storage: string; dedupe: string; jobs: string; ledger?: string; audit?: string };
  dedupe: { windowMs: number; maxMarksPerPartition?: number };
  jobs?: { sealTimeoutMs?: number; bufferMaxBytes?: number; bufferMaxBytesPerPartition?: number; maxFutureSkewMs?: number };
  /** `concurrency`: partitions of events.unique handled at once (default all 12, so one insert can gather them). */
  storage?: { concurrency?: number; batchMaxRows?: number; batchMaxWaitMs?: number; minInsertIntervalMs?: number };
  partitionsConsumedConcurrently: number;
  /** The clock of the job runner and its allowance settlements (tests move it). */
  now?: () => number;
  /** From the control plane: jobs of a suspended account fail instead of running; absent, none is. */
  accountSuspended?: (accountId: string) => boolean;
  /** The erasure suppression list (started before the stages): storage drops erased people's events. */
  erasures?: SuppressionList;
}

/** Assembles the processor's parts; main.ts and the integration tests both call this. */
export function createProcessor(deps: ProcessorDeps): Component[] {
  const deadLetterTopic = topicName(deps.topicPrefix, 'deadLetters');
  const build: Record<ProcessorStage, () => Component> = {
    dedupe: () => createDedupe(deps, deadLetterTopic),
    jobs: () => createJobs(deps, deadLetterTopic),
    storage: () => createStorage(deps, deadLetterTopic),
  };
  const parts = [...new Set(deps.stages ?? PROCESSOR_STAGES)].map((stage) => build[stage]());
  const copies = (deps.stages ?? PROCESSOR_STAGES).includes('storage');
  const copier = (topic: 'billingLedger' | 'auditLog', groupId: string) => ({
    kafka: deps.kafka,
    ch: deps.ch,
    topic: topicName(deps.topicPrefix, topic),
    groupId,
    logger: deps.logger,
  });
  if (copies && deps.groups.ledger) parts.push(createLedgerCopier(copier('billingLedger', deps.groups.ledger)));
  if (copies && deps.groups.audit) parts.push(createAuditCopier(copier('auditLog', deps.groups.audit)));
  return parts;
}

function createDedupe(deps: ProcessorDeps, deadLetterTopic: string): Component {
  const identitiesTopic = topicName(deps.topicPrefix, 'identities');
  const index = createIdentityMapIndex({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix });
  const builder = createIdentityMapBuilder({ kafka: deps.kafka, topic: identitiesTopic, index, logger: deps.logger });
  return createDedupeConsumer({
    identity: createIdentityStep({ index, builder, topic: identitiesTopic, metrics: deps.metrics }),
    identitiesTopic,
    kafka: deps.kafka,
    producer: deps.producer,
    rawTopic: topicName(deps.topicPrefix, 'eventsRaw'),
    uniqueTopic: topicName(deps.topicPrefix, 'eventsUnique'),
    changelogTopic: topicName(deps.topicPrefix, 'dedupeChangelog'),
    groupId: deps.groups.dedupe,
    deadLetters: createDeadLetterSink(deps.producer, deadLetterTopic, 'processor-dedupe', { metrics: deps.metrics, label: 'dedupe', logger: deps.logger }),
    logger: deps.logger,
    metrics: deps.metrics,
    windowMs: deps.dedupe.windowMs,
    maxMarksPerPartition: deps.dedupe.maxMarksPerPartition,
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently,
  });
}

function createJobs(deps: ProcessorDeps, deadLetterTopic: string): Component {
  const now = deps.now ?? Date.now;
  // The processor settles jobs and reads counters; it never reserves event ids, so its seen-ids
  // key is never used: a random one keeps the shared key out of its configuration.
  const allowance = createAllowance({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix, now, seenIdsKey: randomBytes(32) });
  return createJobRunner({
    kafka: deps.kafka,
    producer: deps.producer,
    chunksTopic: topicName(deps.topicPrefix, 'jobChunks'),
    rawTopic: topicName(deps.topicPrefix, 'eventsRaw'),
    deadLetters: createDeadLetterSink(deps.producer, deadLetterTopic, 'processor-jobs', { metrics: deps.metrics, label: 'jobs', logger: deps.logger }),
    statusStore: createJobStatusStore({
      redis: deps.redis,
      producer: deps.producer,
      progressTopic: topicName(deps.topicPrefix, 'jobProgress'),
      keyPrefix: deps.redisKeyPrefix,
    }),
    groupId: deps.groups.jobs,
    logger: deps.logger,
    metrics: deps.metrics,
    validate: createEventValidator({ maxFutureMs: deps.jobs?.maxFutureSkewMs }),
    now,
    sealTimeoutMs: deps.jobs?.sealTimeoutMs,
    bufferMaxBytes: deps.jobs?.bufferMaxBytes,
    bufferMaxBytesPerPartition: deps.jobs?.bufferMaxBytesPerPartition,
    // The job's events now flow to ClickHouse: its reservation becomes what it accepted and the
    // rest is given back (see the allowance reconciler). A job that will never run gives everything
    // back. Idempotent, so "at least once" is fine.
    onJobFinished: (status, receivedAtMs) =>
      allowance.settleJob({
        accountId: status.accountId,
        jobId: status.jobId,
        receivedAtMs,
        accepted: status.status === 'completed' ? status.accepted : 0,
      }),
    onJobDropped: (job) => allowance.settleJob({ ...job, accepted: 0 }),
    ...(deps.accountSuspended ? { accountSuspended: deps.accountSuspended } : {}),
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently,
  });
}

function createStorage(deps: ProcessorDeps, deadLetterTopic: string): Component {
  // The events table's shape (legacy or current) is looked up at start and on every refused insert.
  const format = createEventsRowFormatHolder(deps.ch, deps.logger);
  const writer = createClickHouseWriter({
    ch: deps.ch,
    table: 'events',
    columns: (lines) => eventsRowFormatOfLine(lines[0] ?? '').columns,
    onRejected: () => format.refresh(),
    logger: deps.logger,
    metrics: deps.metrics,
  });
  const deadLetters = createDeadLetterSink(deps.producer, deadLetterTopic, 'processor-storage', {
    metrics: deps.metrics,
    label: 'storage',
    logger: deps.logger,
  });
  const consumer = createStorageConsumer({
    formatRow: format.line,
    kafka: deps.kafka,
    topic: topicName(deps.topicPrefix, 'eventsUnique'),
    groupId: deps.groups.storage,
    writer,
    deadLetters,
    ...(deps.erasures ? { erasures: createErasureFilter(deps.erasures) } : {}),
    logger: deps.logger,
    metrics: deps.metrics,
    partitionsConsumedConcurrently: deps.storage?.concurrency ?? 12,
    batchMaxRows: deps.storage?.batchMaxRows,
    batchMaxWaitMs: deps.storage?.batchMaxWaitMs,
    minInsertIntervalMs: deps.storage?.minInsertIntervalMs,
  });
  // Inserts failing this long make the processor not ready, with the cause in /readyz: a replica
  // failing over takes one failed attempt, a ZooKeeper outage or a full disk keeps failing.
  const now = deps.now ?? Date.now;
  const failingLong = () => {
    const f = writer.failing?.();
    return f !== undefined && now() - f.sinceMs >= INSERTS_FAILING_NOT_READY_MS ? f : undefined;
  };
  return {
    ...consumer,
    async start() {
      await format.refresh();
      await consumer.start();
    },
    healthy: () => consumer.healthy() && failingLong() === undefined,
    waitingFor: () => {
      const f = failingLong();
      if (!f) return [consumer.name];
      return [`${consumer.name}: clickhouse inserts failing for ${Math.round((now() - f.sinceMs) / 1000)} s (cause: ${f.cause}; ${f.detail})`];
    },
  };
}

/** How long inserts may keep failing before /readyz says so (docs/scale.md). */
export const INSERTS_FAILING_NOT_READY_MS = 5_000;

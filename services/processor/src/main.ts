import {
  type Component,
  createAllowanceReconciler,
  createLedgerWriter,
  readAccounts,
  readLedgerTopic,
  tryLease,
  createClickHouseFromConfig,
  openKafkaClientFromConfig,
  createLagCollector,
  createLogger,
  createMetricsRegistry,
  createOpsServer,
  createProducer,
  createRedis,
  createServiceRunner,
  topicName,
} from '@ingest/shared';
import { createLedgerCloser } from './billing/ledger.closer.js';
import { loadProcessorConfig } from './config.js';
import { waitForPipeline } from './metering/pipeline-progress.js';
import { createClickHouseUsageCounts } from './metering/usage-counts.js';
import { createUsageReconciler } from './metering/usage.reconciler.js';
import { createProcessor, type ProcessorStage } from './processor.js';

const config = loadProcessorConfig();
const logger = createLogger({ service: 'processor', level: config.LOG_LEVEL });
const metrics = createMetricsRegistry('processor');
const kafka = await openKafkaClientFromConfig(config, 'processor', logger);
const producer = createProducer(kafka, { compression: config.KAFKA_COMPRESSION });
const ch = createClickHouseFromConfig(config);

const redis = createRedis({ url: config.REDIS_URL, logger });
const topic = (key: Parameters<typeof topicName>[1]) => topicName(config.KAFKA_TOPIC_PREFIX, key);

await Promise.all([producer.connect(), redis.connect()]);
const parts = createProcessor({
  stages: config.PROCESSOR_STAGES.split(',') as ProcessorStage[],
  kafka,
  producer,
  ch,
  redis,
  logger,
  metrics,
  topicPrefix: config.KAFKA_TOPIC_PREFIX,
  redisKeyPrefix: config.REDIS_KEY_PREFIX,
  jobsGroupId: config.PROCESSOR_JOBS_GROUP,
  jobSealTimeoutMs: config.PROCESSOR_JOB_SEAL_TIMEOUT_MS,
  jobBufferMaxBytes: config.PROCESSOR_JOB_BUFFER_MAX_BYTES,
  jobBufferMaxBytesPerPartition: config.PROCESSOR_JOB_BUFFER_MAX_BYTES_PER_PARTITION,
  maxFutureSkewMs: config.MAX_FUTURE_SKEW_MS,
  storageConcurrency: config.STORAGE_CONCURRENCY,
  storageBatchMaxRows: config.STORAGE_BATCH_MAX_ROWS,
  storageBatchMaxWaitMs: config.STORAGE_BATCH_MAX_WAIT_MS,
  storageMinInsertIntervalMs: config.STORAGE_MIN_INSERT_INTERVAL_MS,
  storageGroupId: config.PROCESSOR_STORAGE_GROUP,
  ledgerGroupId: config.PROCESSOR_LEDGER_GROUP,
  dedupeGroupId: config.PROCESSOR_DEDUPE_GROUP,
  dedupeWindowMs: config.DEDUPE_WINDOW_MS,
  dedupeMaxMarksPerPartition: config.DEDUPE_MAX_MARKS_PER_PARTITION,
  partitionsConsumedConcurrently: config.PROCESSOR_PARTITIONS_CONCURRENCY,
});
// Pipeline order: what the reconciler waits for before it trusts ClickHouse's counts

// (Jobs are not a stage: a job's reservation stays pending until the job has run.)
const stages = [
  { groupId: config.PROCESSOR_DEDUPE_GROUP, topic: topic('eventsRaw') },
  { groupId: config.PROCESSOR_STORAGE_GROUP, topic: topic('eventsUnique') },
];
const observers: Component[] = [{ groupId: config.PROCESSOR_JOBS_GROUP, topic: topic('jobChunks') }, ...stages].map(({ groupId, topic: t }) =>
  createLagCollector({ kafka, groupId, topics: [t], registry: metrics, logger }),
);
if (config.USAGE_RECONCILE_INTERVAL_MS > 0) {
  observers.push(
    createUsageReconciler({
      usage: createClickHouseUsageCounts(ch),
      allowance: createAllowanceReconciler(redis, config.REDIS_KEY_PREFIX),
      pipelineCaughtUp: () => waitForPipeline(kafka, stages, { timeoutMs: 30_000 }),
      logger,
      metrics,
      intervalMs: config.USAGE_RECONCILE_INTERVAL_MS,
    }),
  );
}
if (config.BILLING_CLOSE_INTERVAL_MS > 0) {
  const ledgerTopic = topic('billingLedger');
  observers.push(
    createLedgerCloser({
      usage: createClickHouseUsageCounts(ch),
      allowance: createAllowanceReconciler(redis, config.REDIS_KEY_PREFIX),
      readAccounts: () => readAccounts(kafka, topic('controlAccounts'), logger),
      readLedger: () => readLedgerTopic(kafka, ledgerTopic, logger),
      ledger: createLedgerWriter(producer, ledgerTopic),
      pipelineCaughtUp: () => waitForPipeline(kafka, stages, { timeoutMs: 30_000 }),
      lease: (periodId) => tryLease(redis, `${config.REDIS_KEY_PREFIX}billing:close:${periodId}`, 10 * 60_000),
      logger,
      intervalMs: config.BILLING_CLOSE_INTERVAL_MS,
      closeDelayMs: config.BILLING_CLOSE_DELAY_MS,
    }),
  );
}
const ops = createOpsServer({
  host: config.PROCESSOR_OPS_HOST,
  port: config.PROCESSOR_OPS_PORT,
  metrics,
  ready: () => parts.every((p) => p.healthy()),
  live: () => runner.alive(),
  logger,
});
const runner = createServiceRunner({
  logger,
  components: [ops, ...parts, ...observers],
  clients: [{ name: 'kafka-producer', close: () => producer.disconnect() }, ch, redis],
  shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
});
runner.installSignalHandlers();
await runner.start();
logger.info({ ops: ops.address() }, 'processor running');

import {
  type Component,
  createAllowanceReconciler,
  createClickHouseFromConfig,
  createKafkaClientFromConfig,
  createLagCollector,
  createLogger,
  createMetricsRegistry,
  createOpsServer,
  createProducer,
  createRedis,
  createServiceRunner,
  topicName,
} from '@ingest/shared';
import { loadProcessorConfig } from './config.js';
import { createUsageReconciler } from './metering/usage.reconciler.js';
import { createProcessor, type ProcessorStage } from './processor.js';

const config = loadProcessorConfig();
const logger = createLogger({ service: 'processor', level: config.LOG_LEVEL });
const metrics = createMetricsRegistry('processor');
const kafka = createKafkaClientFromConfig(config, 'processor', logger);
const producer = createProducer(kafka, { compression: config.KAFKA_COMPRESSION });
const ch = createClickHouseFromConfig(config);

const redis = createRedis({ url: config.REDIS_URL });
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
  maxFutureSkewMs: config.MAX_FUTURE_SKEW_MS,
  storageConcurrency: config.STORAGE_CONCURRENCY,
  storageBatchMaxRows: config.STORAGE_BATCH_MAX_ROWS,
  storageBatchMaxWaitMs: config.STORAGE_BATCH_MAX_WAIT_MS,
  storageMinInsertIntervalMs: config.STORAGE_MIN_INSERT_INTERVAL_MS,
  storageGroupId: config.PROCESSOR_STORAGE_GROUP,
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
      kafka,
      ch,
      allowance: createAllowanceReconciler(redis, config.REDIS_KEY_PREFIX),
      stages,
      logger,
      metrics,
      intervalMs: config.USAGE_RECONCILE_INTERVAL_MS,
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

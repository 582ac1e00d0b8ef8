import {
  createControlPlane,
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
import { createAdapter } from './adapters/index.js';
import { loadCrmSinkConfig } from './config.js';
import { createCrmSink } from './crm-sink.js';

const config = loadCrmSinkConfig();
const logger = createLogger({ service: 'crm-sink', level: config.LOG_LEVEL });
const metrics = createMetricsRegistry('crm-sink');
const kafka = createKafkaClientFromConfig(config, 'crm-sink', logger);
const producer = createProducer(kafka, { compression: config.KAFKA_COMPRESSION });
const redis = createRedis({ url: config.REDIS_URL });
const controlPlane = createControlPlane({
  kafka,
  producer,
  topicPrefix: config.KAFKA_TOPIC_PREFIX,
  logger,
  metrics,
  instanceId: 'crm-sink',
  staleAfterMs: config.CONTROL_PLANE_STALE_AFTER_MS,
  deadAfterMs: config.CONTROL_PLANE_DEAD_AFTER_MS,
});

await Promise.all([producer.connect(), redis.connect()]);
const sink = createCrmSink({
  kafka,
  producer,
  redis,
  mappings: controlPlane,
  createAdapter: (credential) =>
    createAdapter(credential, {
      connectTimeoutMs: config.CRM_HTTP_CONNECT_TIMEOUT_MS,
      headersTimeoutMs: config.CRM_HTTP_TIMEOUT_MS,
      bodyTimeoutMs: config.CRM_HTTP_TIMEOUT_MS,
    }),
  logger,
  metrics,
  topicPrefix: config.KAFKA_TOPIC_PREFIX,
  groupId: config.CRM_SINK_GROUP,
  redisKeyPrefix: config.REDIS_KEY_PREFIX,
  ledgerTtlSeconds: config.CRM_LEDGER_TTL_SECONDS,
  syncStateTtlSeconds: config.CRM_SYNC_STATE_TTL_SECONDS,
  coalesceWindowMs: config.CRM_COALESCE_WINDOW_MS,
  coalesceMaxRecords: config.CRM_COALESCE_MAX_RECORDS,
  rate: { ratePerSecond: config.CRM_RATE_PER_SECOND, burst: config.CRM_RATE_BURST },
  retry: {
    maxAttempts: config.CRM_RETRY_MAX_ATTEMPTS,
    budgetMs: config.CRM_RETRY_BUDGET_MS,
    baseDelayMs: config.CRM_RETRY_BASE_DELAY_MS,
    maxDelayMs: config.CRM_RETRY_MAX_DELAY_MS,
  },
  maxUnfinishedPerPartition: config.CRM_SINK_MAX_UNFINISHED_PER_PARTITION,
  partitionsConsumedConcurrently: config.CRM_SINK_PARTITIONS_CONCURRENCY,
});
const lag = createLagCollector({
  kafka,
  groupId: config.CRM_SINK_GROUP,
  topics: [topicName(config.KAFKA_TOPIC_PREFIX, 'eventsUnique'), topicName(config.KAFKA_TOPIC_PREFIX, 'crmReplay')],
  registry: metrics,
  logger,
});
const ops = createOpsServer({
  host: config.CRM_SINK_OPS_HOST,
  port: config.CRM_SINK_OPS_PORT,
  metrics,
  ready: () => controlPlane.caughtUp() && controlPlane.fresh() && sink.healthy(),
  live: () => runner.alive(),
  logger,
});
// The control plane starts first: the sink must know the mappings before its first event.
const runner = createServiceRunner({
  logger,
  components: [ops, controlPlane, sink, lag],
  clients: [{ name: 'kafka-producer', close: () => producer.disconnect() }, redis],
  shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
});
runner.installSignalHandlers();
await runner.start();
logger.info({ ops: ops.address() }, 'crm-sink running');

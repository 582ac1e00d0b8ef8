import { createClickHouse, createKafkaClient, createLogger, createMetricsRegistry, createOpsServer, createProducer, createServiceRunner } from '@ingest/shared';
import { loadProcessorConfig } from './config.js';
import { createProcessor } from './processor.js';

const config = loadProcessorConfig();
const logger = createLogger({ service: 'processor', level: config.LOG_LEVEL });
const metrics = createMetricsRegistry('processor');
const kafka = createKafkaClient({ brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-processor`, logger });
const producer = createProducer(kafka);
const ch = createClickHouse({
  url: config.CLICKHOUSE_URL,
  username: config.CLICKHOUSE_USER,
  password: config.CLICKHOUSE_PASSWORD,
  database: config.CLICKHOUSE_DATABASE,
});

await producer.connect();
const parts = createProcessor({
  kafka,
  producer,
  ch,
  logger,
  metrics,
  topicPrefix: config.KAFKA_TOPIC_PREFIX,
  storageGroupId: config.PROCESSOR_STORAGE_GROUP,
  partitionsConsumedConcurrently: config.PROCESSOR_PARTITIONS_CONCURRENCY,
});
const ops = createOpsServer({
  host: config.PROCESSOR_OPS_HOST,
  port: config.PROCESSOR_OPS_PORT,
  metrics,
  ready: () => parts.every((p) => p.healthy()),
  logger,
});
const runner = createServiceRunner({
  logger,
  components: [ops, ...parts],
  clients: [{ name: 'kafka-producer', close: () => producer.disconnect() }, ch],
  shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
});
runner.installSignalHandlers();
await runner.start();
logger.info({ ops: ops.address() }, 'processor running');

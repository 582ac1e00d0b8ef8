/**
 * Provisions what the services need before they start: Kafka topics and ClickHouse
 * migrations. Idempotent; `npm start` runs it every time, operators run `npm run setup`.
 */
import {
  CLICKHOUSE_MIGRATIONS_DIR,
  ClickHouseConfig,
  CommonConfig,
  openKafkaClientFromConfig,
  createLogger,
  ensureTopics,
  KafkaConfig,
  loadConfig,
  migrate,
} from '@ingest/shared';
import { Type } from '@sinclair/typebox';

const config = loadConfig(
  Type.Object({
    ...CommonConfig,
    ...KafkaConfig,
    ...ClickHouseConfig,
    KAFKA_REPLICATION_FACTOR: Type.Integer({ minimum: 1, default: 1 }),
    CLICKHOUSE_MIGRATIONS_DIR: Type.String({ default: CLICKHOUSE_MIGRATIONS_DIR }),
  }),
);
const logger = createLogger({ service: 'setup', level: config.LOG_LEVEL });

const kafka = await openKafkaClientFromConfig(config, 'setup', logger);
const created = await ensureTopics(kafka, { prefix: config.KAFKA_TOPIC_PREFIX, replicationFactor: config.KAFKA_REPLICATION_FACTOR, logger });

const result = await migrate({
  url: config.CLICKHOUSE_URL,
  username: config.CLICKHOUSE_USER,
  password: config.CLICKHOUSE_PASSWORD,
  database: config.CLICKHOUSE_DATABASE,
  dir: config.CLICKHOUSE_MIGRATIONS_DIR,
  logger,
});

logger.info(
  { topicsCreated: created.length, migrationsApplied: result.applied, migrationsSkipped: result.skipped, clickhouse: result.serverVersion },
  'setup complete',
);

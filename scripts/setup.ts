/**
 * Provisions what the services need before they start: Kafka topics, the services' Kafka ACLs
 * (when KAFKA_ACL_PRINCIPALS is set; docs/security.md) and ClickHouse migrations. Idempotent;
 * `npm start` runs it every time, operators run `npm run setup`.
 */
import {
  applyAcls,
  CLICKHOUSE_MIGRATIONS_DIR,
  ClickHouseConfig,
  CommonConfig,
  openKafkaClientFromConfig,
  createLogger,
  ensureTopics,
  KafkaConfig,
  loadConfig,
  migrate,
  parseAclPrincipals,
} from '@ingest/platform';
import { Type } from '@sinclair/typebox';

const config = loadConfig(
  Type.Object({
    ...CommonConfig,
    ...KafkaConfig,
    ...ClickHouseConfig,
    KAFKA_REPLICATION_FACTOR: Type.Integer({ minimum: 1, default: 1 }),
    /** `role=principal` pairs whose ACLs setup creates (needs a super user); empty: none. */
    KAFKA_ACL_PRINCIPALS: Type.String({ default: '' }),
    CLICKHOUSE_MIGRATIONS_DIR: Type.String({ default: CLICKHOUSE_MIGRATIONS_DIR }),
  }),
);
const logger = createLogger({ service: 'setup', level: config.LOG_LEVEL });

const kafka = await openKafkaClientFromConfig(config, 'setup', logger);
const created = await ensureTopics(kafka, { prefix: config.KAFKA_TOPIC_PREFIX, replicationFactor: config.KAFKA_REPLICATION_FACTOR, logger });
const principals = parseAclPrincipals(config.KAFKA_ACL_PRINCIPALS);
const acls = principals.length > 0 ? await applyAcls(kafka, { principals, topicPrefix: config.KAFKA_TOPIC_PREFIX, logger }) : 0;

const result = await migrate({
  url: config.CLICKHOUSE_URL,
  username: config.CLICKHOUSE_USER,
  password: config.CLICKHOUSE_PASSWORD,
  database: config.CLICKHOUSE_DATABASE,
  dir: config.CLICKHOUSE_MIGRATIONS_DIR,
  logger,
});

logger.info(
  { topicsCreated: created.length, kafkaAcls: acls, migrationsApplied: result.applied, migrationsSkipped: result.skipped, clickhouse: result.serverVersion },
  'setup complete',
);

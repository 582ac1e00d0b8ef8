import { randomBytes } from 'node:crypto';
import {
  type ClickHouse,
  createClickHouse,
  dropDatabase,
  migrate,
  deleteTopics,
  ensureTopics,
  createKafkaClient,
  type KafkaClient,
  type KafkaDriverName,
  TOPICS,
  type TopicKey,
  topicName,
  createLogger,
  type Logger,
  CLICKHOUSE_MIGRATIONS_DIR,
  type ReplicationSettings,
} from '@ingest/platform';
import { type IntegrationEnv, integrationEnv } from './env.js';
import { useFixture } from './use-fixture.js';

/** Short unique suffix so parallel test files never share topics, groups or databases. */
export function uniqueSuffix(): string {
  return `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
}

export function testLogger(): Logger {
  return createLogger({ service: 'test', level: process.env.TEST_LOG_LEVEL ?? 'silent' });
}

/** Every topic of the control plane: what a test that starts one needs (it reads them all). */
export const CONTROL_PLANE_TOPICS = (Object.keys(TOPICS) as TopicKey[]).filter((k) => k.startsWith('control'));

export interface TestKafka {
  kafka: KafkaClient;
  prefix: string;
  topic(key: TopicKey): string;
  cleanup(): Promise<void>;
}

/**
 * Creates the named topics under a fresh prefix; `cleanup` deletes them. `driver` overrides
 * KAFKA_DRIVER; `replication` is 1/1 unless given (the scale tests' cluster: 3/2).
 */
export async function createTestKafka(
  keys: TopicKey[],
  env: IntegrationEnv = integrationEnv(),
  driver: KafkaDriverName = env.kafkaDriver,
  replication?: ReplicationSettings,
): Promise<TestKafka> {
  const prefix = `t${uniqueSuffix()}.`;
  const logger = testLogger();
  const kafka = createKafkaClient({ brokers: env.kafkaBrokers, clientId: `test-${prefix}`, driver, logger });
  // Fewer partitions than production keeps topic creation fast on the test broker.
  const specs = keys.map((k) => ({ ...TOPICS[k], partitions: Math.min(TOPICS[k].partitions, 3) }));
  await ensureTopics(kafka, { prefix, specs, logger, ...replication });
  return {
    kafka,
    prefix,
    topic: (key) => topicName(prefix, key),
    cleanup: () =>
      deleteTopics(
        kafka,
        keys.map((k) => topicName(prefix, k)),
      ),
  };
}

export interface TestClickHouse {
  ch: ClickHouse;
  database: string;
  cleanup(): Promise<void>;
}

/** A fresh database (a unique name, or `database`) with every migration applied; `cleanup` drops it. */
export async function createTestClickHouse(env: IntegrationEnv = integrationEnv(), database = `test_${uniqueSuffix()}`): Promise<TestClickHouse> {
  const server = {
    url: env.clickhouseUrl,
    username: env.clickhouseUser,
    password: env.clickhousePassword,
    ...(env.clickhouseCluster ? { cluster: env.clickhouseCluster } : {}),
  };
  await migrate({ ...server, database, dir: CLICKHOUSE_MIGRATIONS_DIR, logger: testLogger() });
  const ch = createClickHouse({ ...server, database });
  return {
    ch,
    database,
    async cleanup() {
      await ch.close();
      await dropDatabase({ ...server, database });
    },
  };
}

/**
 * A client on `database` as the gateway's read-only user (CLICKHOUSE_READER_USER: the user
 * `npm start`, compose and the manifests give the gateway), for code under test that reads.
 */
export function createReaderClickHouse(database: string, env: IntegrationEnv = integrationEnv()): ClickHouse {
  return createClickHouse({ url: env.clickhouseUrl, username: env.clickhouseReader.user, password: env.clickhouseReader.password, database });
}

/** createTestKafka for the whole test file: topics made before its tests, deleted after them. */
export function useTestKafka(keys: TopicKey[]): TestKafka {
  return useFixture(
    () => createTestKafka(keys),
    (kafka) => kafka.cleanup(),
  );
}

/** createTestClickHouse for the whole test file: a migrated database before its tests, dropped after them. */
export function useTestClickHouse(): TestClickHouse {
  return useFixture(
    () => createTestClickHouse(),
    (clickhouse) => clickhouse.cleanup(),
  );
}

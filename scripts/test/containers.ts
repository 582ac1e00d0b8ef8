/**
 * The containers the integration tests start when no servers are given and a Docker engine
 * answers (global-setup.fixture.ts): the same server versions as the local stack and docker-compose.yml
 * (Kafka 4.1.1 from the `apache/kafka` image in KRaft mode). Pure descriptions, unit-tested;
 * the Docker path itself cannot run on machines without a Docker engine.
 */
import { readerSettingsSql } from '@ingest/platform';

export const KAFKA_IMAGE = 'apache/kafka:4.1.1';
export const CLICKHOUSE_IMAGE = 'clickhouse/clickhouse-server:25.8';
export const REDIS_IMAGE = 'redis:7.4';

export interface KafkaContainerSpec {
  image: string;
  /** Container port 9092 published on `hostPort`, which the broker advertises. */
  ports: { container: number; host: number }[];
  env: Record<string, string>;
}

/**
 * A single KRaft broker+controller. The advertised address must be the one clients reach, so
 * the host port is chosen before the start and published as is (not a random mapping).
 */
export function kafkaContainerSpec(hostPort: number): KafkaContainerSpec {
  return {
    image: KAFKA_IMAGE,
    ports: [{ container: 9092, host: hostPort }],
    env: {
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: 'PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093',
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${hostPort}`,
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
      KAFKA_INTER_BROKER_LISTENER_NAME: 'PLAINTEXT',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      // Topics are created by the tests (ensureTopics), never by a producer's metadata request.
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
    },
  };
}

/**
 * The gateway's read-only user on the ClickHouse container (the local stack's comes from
 * users.xml): the settings `npm run setup` gives it (READER_SETTINGS), SELECT on every database,
 * since each test makes its own.
 */
export const TEST_CLICKHOUSE_READER = { user: 'ingest_reader', password: 'ingest-reader-local' };
export function testReaderStatements(): string[] {
  const { user, password } = TEST_CLICKHOUSE_READER;
  return [
    `CREATE USER IF NOT EXISTS ${user} IDENTIFIED WITH sha256_password BY '${password}' SETTINGS ${readerSettingsSql()}`,
    `GRANT SELECT ON *.* TO ${user}`,
  ];
}

/** What the tests read once the containers run: the same variables `scripts/test.sh` exports. */
export function integrationVariables(started: {
  kafkaHostPort: number;
  clickhouseUrl: string;
  clickhouseUser: string;
  clickhousePassword: string;
  redisUrl: string;
}): Record<string, string> {
  return {
    KAFKA_BROKERS: `127.0.0.1:${started.kafkaHostPort}`,
    CLICKHOUSE_URL: started.clickhouseUrl,
    CLICKHOUSE_USER: started.clickhouseUser,
    CLICKHOUSE_PASSWORD: started.clickhousePassword,
    CLICKHOUSE_READER_USER: TEST_CLICKHOUSE_READER.user,
    CLICKHOUSE_READER_PASSWORD: TEST_CLICKHOUSE_READER.password,
    REDIS_URL: started.redisUrl,
  };
}

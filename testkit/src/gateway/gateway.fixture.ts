/**
 * Builds the real gateway app (the ingestion API) and the console's two apps (the dashboard and
 * the admin API) on real Kafka, Redis and ClickHouse for integration tests: fresh
 * topics under a unique prefix, a fresh ClickHouse database with the migrations applied, a real
 * control plane with one account and API key, and helpers to read what the gateway wrote.
 * Requests go through `app.inject` (no port needed).
 *
 * The gateway and the console read ClickHouse as the read-only user that `npm start`, compose and the manifests
 * give it (`ingest_reader`, readonly = 1), never as the tests' user: a query that user may not
 * run fails here as it fails for users. Tests insert rows through `clickhouse.ch`.
 */
import { randomBytes } from 'node:crypto';
import type { EventRecord, JobMessage } from '@ingest/schemas';
import { type Account, API_KEY_SCOPES, type ControlPlane, createControlPlane, createJobStatusStore, type Plan } from '@ingest/domain';
import {
  type ClickHouse,
  createBatchConsumer,
  createMetricsRegistry,
  createProducer,
  createRedis,
  type Producer,
  type Redis,
  type Registry,
  type TopicKey,
  TOPICS as TOPIC_SPECS,
} from '@ingest/platform';
import {
  createReaderClickHouse,
  createTestClickHouse,
  createTestKafka,
  integrationEnv,
  type TestClickHouse,
  type TestKafka,
  testCredentialKeys,
  TEST_SEEN_IDS_KEY,
  testLogger,
  uniqueSuffix,
  useFixture,
  waitFor,
} from '../index.js';
import type { FastifyInstance } from 'fastify';
import { buildAdminApp, buildConsoleApp, loadConsoleConfig } from '@ingest/console';
import { buildApp, loadGatewayConfig } from '@ingest/gateway';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdefghij';

export interface GatewayFixture {
  /** The gateway: the ingestion API (/v1). */
  app: FastifyInstance;
  /** The console's dashboard (/dashboard), on the same control plane, Redis and Kafka topics. */
  console: FastifyInstance;
  /** The console's admin API (its own listener in production), on the same control plane and Redis. */
  admin: FastifyInstance;
  kafka: TestKafka;
  /** The gateway's ClickHouse database (fresh, migrated); tests insert stored events here. */
  clickhouse: TestClickHouse;
  /** What the gateway reads that database with: the read-only user (CLICKHOUSE_READER_USER, `ingest_reader`). */
  gatewayClickHouse: ClickHouse;
  redis: Redis;
  producer: Producer;
  controlPlane: ControlPlane;
  /** The gateway app's metrics registry (what its /metrics serves). */
  metrics: Registry;
  /** The console's (its dashboard's and admin API's), its own process in production. */
  consoleMetrics: Registry;
  /** Another gateway replica: its own app and control plane, the same Kafka topics and Redis; `env` changes its settings. */
  replica(env?: Record<string, string>): Promise<FastifyInstance>;
  /** Creates an account with a fresh key holding every scope (as keys made before scopes existed). */
  newAccount(plan?: Plan): Promise<{ account: Account; apiKey: string; keyId: string }>;
  /** Reads every message of a topic from the beginning until `until` holds. */
  readTopic<T>(key: TopicKey, until: (values: T[]) => boolean, description: string): Promise<{ values: T[]; keys: string[] }>;
  close(): Promise<void>;
}

// Every topic, so end-to-end tests can run the processor on the same prefix.
const TOPICS = Object.keys(TOPIC_SPECS) as TopicKey[];

export interface GatewayFixtureOptions {
  /** The gateways' clock (receipt times, the allowance's period and hours). */
  now?: () => number;
  /** What the main app sends through (e.g. a producer that loses some acknowledgements). */
  producer?: (real: Producer) => Producer;
  /** Topics and database to run on instead of fresh ones (e.g. a restored backup); closing the fixture still deletes them. */
  stores?: { kafka: TestKafka; clickhouse: TestClickHouse };
}

export async function createGatewayFixture(env: Record<string, string> = {}, options: GatewayFixtureOptions = {}): Promise<GatewayFixture> {
  const integration = integrationEnv();
  const [kafka, clickhouse] = options.stores
    ? [options.stores.kafka, options.stores.clickhouse]
    : await Promise.all([createTestKafka(TOPICS), createTestClickHouse(integration)]);
  const reader = createReaderClickHouse(clickhouse.database, integration);
  const logger = testLogger();
  const baseEnv = {
    KAFKA_BROKERS: integration.kafkaBrokers,
    KAFKA_DRIVER: integration.kafkaDriver,
    REDIS_URL: integration.redisUrl,
    CLICKHOUSE_URL: integration.clickhouseUrl,
    KAFKA_TOPIC_PREFIX: kafka.prefix,
    ADMIN_TOKEN,
    SEEN_IDS_HMAC_KEY: TEST_SEEN_IDS_KEY,
    // As the stack's start script does: owners can enrol a second factor.
    DASHBOARD_SECRET_KEYS: randomBytes(32).toString('base64'),
    ...env,
  };
  const config = loadGatewayConfig(baseEnv);
  const consoleConfig = loadConsoleConfig(baseEnv);
  const producer = createProducer(kafka.kafka, {
    sendTimeoutMs: config.KAFKA_SEND_TIMEOUT_MS,
    inFlightTimeoutMs: config.KAFKA_IN_FLIGHT_TIMEOUT_MS,
    maxQueuedBytes: config.KAFKA_MAX_QUEUED_BYTES,
  });
  // A test may give the gateway a Redis of its own (e.g. one it stops).
  const redis = createRedis({ url: env.REDIS_URL ?? integration.redisUrl, failFast: true, logger });
  await Promise.all([producer.connect(), redis.connect()]);
  const controlPlane = createControlPlane({ kafka: kafka.kafka, producer, topicPrefix: kafka.prefix, logger, credentialSealer: testCredentialKeys().sealer });
  await controlPlane.start();
  const jobStatus = createJobStatusStore({ redis, producer, progressTopic: kafka.topic('jobProgress'), keyPrefix: config.REDIS_KEY_PREFIX });
  const metrics = createMetricsRegistry('gateway-test');
  const app = await buildApp({
    config,
    logger,
    metrics,
    producer: options.producer ? options.producer(producer) : producer,
    redis,
    controlPlane,
    jobStatus,
    ch: reader,
    ...(options.now ? { now: options.now } : {}),
  });
  await app.ready();
  const consoleMetrics = createMetricsRegistry('console-test');
  const consoleApp = await buildConsoleApp({
    config: consoleConfig,
    logger,
    metrics: consoleMetrics,
    producer: options.producer ? options.producer(producer) : producer,
    redis,
    controlPlane,
    jobStatus,
    ch: reader,
    kafka: kafka.kafka,
    ...(options.now ? { now: options.now } : {}),
  });
  await consoleApp.ready();
  const admin = await buildAdminApp({
    config: consoleConfig,
    logger,
    metrics: consoleMetrics,
    redis,
    controlPlane,
    producer,
    ch: reader,
    ...(options.now ? { now: options.now } : {}),
  });
  await admin.ready();
  const replicas: { app: FastifyInstance; controlPlane: ControlPlane }[] = [];

  return {
    app,
    console: consoleApp,
    admin,
    kafka,
    clickhouse,
    gatewayClickHouse: reader,
    redis,
    producer,
    controlPlane,
    metrics,
    consoleMetrics,
    async replica(replicaEnv = {}) {
      const replicaConfig = loadGatewayConfig({ ...baseEnv, ...replicaEnv });
      const replicaControlPlane = createControlPlane({
        kafka: kafka.kafka,
        producer,
        topicPrefix: kafka.prefix,
        logger,
        credentialSealer: testCredentialKeys().sealer,
      });
      await replicaControlPlane.start();
      const replicaApp = await buildApp({
        config: replicaConfig,
        logger,
        metrics: createMetricsRegistry('gateway-replica'),
        producer,
        redis,
        controlPlane: replicaControlPlane,
        jobStatus,
        ch: reader,
        ...(options.now ? { now: options.now } : {}),
      });
      await replicaApp.ready();
      replicas.push({ app: replicaApp, controlPlane: replicaControlPlane });
      return replicaApp;
    },
    async newAccount(plan = 'pro') {
      const account = await controlPlane.createAccount({ name: `Test ${uniqueSuffix()}`, plan });
      const { record, plaintext } = await controlPlane.createApiKey(account.id, 'test', { scopes: API_KEY_SCOPES });
      return { account, apiKey: plaintext, keyId: record.id };
    },
    async readTopic<T>(key: TopicKey, until: (values: T[]) => boolean, description: string) {
      const values: T[] = [];
      const keys: string[] = [];
      const consumer = createBatchConsumer(kafka.kafka, {
        name: 'test-reader',
        groupId: `reader-${uniqueSuffix()}`,
        topics: [kafka.topic(key)],
        logger,
        handleBatch: async (messages) => {
          for (const m of messages) {
            values.push(JSON.parse(m.value?.toString() ?? 'null') as T);
            keys.push(m.key?.toString() ?? '');
          }
        },
      });
      await consumer.start();
      try {
        await waitFor(() => until(values), { description, timeoutMs: 20_000 });
      } finally {
        await consumer.stop();
      }
      return { values, keys };
    },
    async close() {
      for (const r of replicas) {
        await r.app.close();
        await r.controlPlane.stop();
      }
      await app.close();
      await consoleApp.close();
      await admin.close();
      await controlPlane.stop();
      await producer.disconnect();
      await redis.close();
      await reader.close();
      await Promise.allSettled([kafka.cleanup(), clickhouse.cleanup()]);
    },
  };
}

export type { EventRecord, JobMessage };

/**
 * A random client address (from 10.0.0.0/8) per test client: rate-limit counters live in the
 * shared Redis for a minute, so fixed addresses would collide across runs and test files.
 */
export function randomClientIp(): string {
  const b = () => Math.floor(Math.random() * 254) + 1;
  return `10.${b()}.${b()}.${b()}`;
}

/** createGatewayFixture for the whole test file: built before its tests, closed after them. */
export function useGatewayFixture(env: Record<string, string> = {}, options: GatewayFixtureOptions = {}): GatewayFixture {
  return useFixture(
    () => createGatewayFixture(env, options),
    (gw) => gw.close(),
  );
}

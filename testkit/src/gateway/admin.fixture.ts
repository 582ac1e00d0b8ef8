import { type ControlPlane, createControlPlane, type OutboundPolicy } from '@ingest/domain';
import { type ClickHouse, createMetricsRegistry, createProducer, createRedis, type Producer, type Redis } from '@ingest/platform';
import {
  createTestClickHouse,
  createTestKafka,
  integrationEnv,
  type TestClickHouse,
  type TestKafka,
  testCredentialKeys,
  testLogger,
  uniqueSuffix,
} from '../index.js';
import type { FastifyInstance } from 'fastify';
import { buildAdminApp, loadConsoleConfig } from '@ingest/console';

/**
 * For tests only: the admin app of the console's admin listener (buildAdminApp) over a real
 * control plane on real Kafka, under a fresh topic prefix, and real Redis for the CRM dry-run's
 * reads of the sink's state (a fresh key prefix unless the test shares a sink's) and the
 * admin listener's rate limit, and a fresh ClickHouse database for the billing ledger's reads.
 */
export interface AdminTestStack {
  kafka: TestKafka;
  producer: Producer;
  controlPlane: ControlPlane;
  redis: Redis;
  redisKeyPrefix: string;
  /** A new app over the same control plane, e.g. with another token or outbound policy (default: the production one). */
  app(
    adminToken: string,
    options?: { outboundPolicy?: OutboundPolicy; env?: Record<string, string>; openClickHouseAccess?: () => ClickHouse },
  ): Promise<FastifyInstance>;
  close(): Promise<void>;
}

export async function startAdminTestStack(options: { redisKeyPrefix?: string } = {}): Promise<AdminTestStack> {
  const [kafka, clickhouse]: [TestKafka, TestClickHouse] = await Promise.all([
    createTestKafka([
      'controlAccounts',
      'controlApiKeys',
      'controlMappings',
      'controlCrmCredentials',
      'controlOwners',
      'controlAdmins',
      'billingLedger',
      'auditLog',
    ]),
    createTestClickHouse(),
  ]);
  const producer = createProducer(kafka.kafka);
  const redis = createRedis({ url: integrationEnv().redisUrl });
  const redisKeyPrefix = options.redisKeyPrefix ?? `t${uniqueSuffix()}:`;
  await Promise.all([producer.connect(), redis.connect()]);
  const controlPlane = createControlPlane({
    kafka: kafka.kafka,
    producer,
    topicPrefix: kafka.prefix,
    logger: testLogger(),
    instanceId: 'admin-test',
    credentialSealer: testCredentialKeys().sealer,
  });
  await controlPlane.start();
  const apps: FastifyInstance[] = [];
  return {
    kafka,
    producer,
    controlPlane,
    redis,
    redisKeyPrefix,
    async app(adminToken, { env = {}, ...appOptions } = {}) {
      const config = loadConsoleConfig({
        ADMIN_TOKEN: adminToken,
        REDIS_URL: integrationEnv().redisUrl,
        REDIS_KEY_PREFIX: redisKeyPrefix,
        KAFKA_TOPIC_PREFIX: kafka.prefix,
        // The CLI tests call it often from one address.
        RATE_LIMIT_PER_MINUTE: '100000',
        ...env,
      });
      const app = await buildAdminApp({
        config,
        logger: testLogger(),
        metrics: createMetricsRegistry('admin-test'),
        redis,
        controlPlane,
        producer,
        ch: clickhouse.ch,
        ...appOptions,
      });
      await app.ready();
      apps.push(app);
      return app;
    },
    async close() {
      await Promise.allSettled(apps.map((a) => a.close()));
      await controlPlane.stop();
      await producer.disconnect();
      // Keys under a prefix the stack made are its own; a shared prefix is cleaned by its owner.
      const keys = options.redisKeyPrefix === undefined ? await redis.keys(`${redisKeyPrefix}*`) : [];
      if (keys.length > 0) await redis.del(...keys);
      await redis.close();
      await Promise.allSettled([kafka.cleanup(), clickhouse.cleanup()]);
    },
  };
}

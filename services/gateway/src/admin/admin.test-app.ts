import { randomUUID } from 'node:crypto';
import {
  AppError,
  type ControlPlane,
  createAllowance,
  createControlPlane,
  createLedgerWriter,
  createProducer,
  createRecordStateReader,
  createRedis,
  type OutboundPolicy,
  type Producer,
  type Redis,
} from '@ingest/shared';
import { createTestKafka, integrationEnv, type TestKafka, testLogger, uniqueSuffix } from '@ingest/shared/testing';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { registerErrorHandling } from '../http/error-handler.js';
import { registerJsonBodyParser } from '../http/json-body.js';
import { adminRoutes } from './admin.routes.js';

/**
 * For tests only: the admin API on a minimal fastify app (same body parser, error handling and
 * ajv options as buildApp) over a real control plane on real Kafka, under a fresh topic prefix,
 * and real Redis for the CRM dry-run's reads of the sink's state (a fresh key prefix unless the
 * test shares a sink's).
 */
export interface AdminTestStack {
  kafka: TestKafka;
  producer: Producer;
  controlPlane: ControlPlane;
  redis: Redis;
  redisKeyPrefix: string;
  /** A new app over the same control plane, e.g. with another token or outbound policy (default: the production one). */
  app(adminToken: string, options?: { outboundPolicy?: OutboundPolicy }): Promise<FastifyInstance>;
  close(): Promise<void>;
}

export async function startAdminTestStack(options: { redisKeyPrefix?: string } = {}): Promise<AdminTestStack> {
  const kafka = await createTestKafka(['controlAccounts', 'controlApiKeys', 'controlMappings', 'controlCrmCredentials', 'controlOwners', 'billingLedger']);
  const producer = createProducer(kafka.kafka);
  const redis = createRedis({ url: integrationEnv().redisUrl });
  const redisKeyPrefix = options.redisKeyPrefix ?? `t${uniqueSuffix()}:`;
  await Promise.all([producer.connect(), redis.connect()]);
  const controlPlane = createControlPlane({ kafka: kafka.kafka, producer, topicPrefix: kafka.prefix, logger: testLogger(), instanceId: 'admin-test' });
  await controlPlane.start();
  const apps: FastifyInstance[] = [];
  return {
    kafka,
    producer,
    controlPlane,
    redis,
    redisKeyPrefix,
    async app(adminToken, appOptions = {}) {
      const app = Fastify({
        loggerInstance: testLogger() as FastifyBaseLogger,
        genReqId: () => randomUUID(),
        requestIdHeader: false,
        ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: true, useDefaults: false } },
      });
      registerJsonBodyParser(app);
      registerErrorHandling(app);
      // The ledger is written to its real topic; reading it back needs ClickHouse, which this
      // stack has not (the billing tests run the whole gateway).
      const billing = {
        ledger: createLedgerWriter(producer, kafka.topic('billingLedger')),
        reader: {
          list: () => Promise.reject(new AppError('not_in_this_test_stack', 'the admin test stack has no ClickHouse')),
        },
        periodUsage: createAllowance({ redis, keyPrefix: redisKeyPrefix }).periodUsage,
      };
      const recordStates = createRecordStateReader({ redis, keyPrefix: redisKeyPrefix });
      await app.register(adminRoutes({ controlPlane, adminToken, recordStates, billing, ...appOptions }), { prefix: '/admin/v1' });
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
      await kafka.cleanup();
    },
  };
}

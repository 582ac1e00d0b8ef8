import { randomUUID } from 'node:crypto';
import { type ControlPlane, createControlPlane, createProducer, type Producer } from '@ingest/shared';
import { createTestKafka, type TestKafka, testLogger } from '@ingest/shared/testing';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { registerErrorHandling } from '../http/error-handler.js';
import { registerJsonBodyParser } from '../http/json-body.js';
import { adminRoutes } from './admin.routes.js';

/**
 * For tests only: the admin API on a minimal fastify app (same body parser, error handling and
 * ajv options as buildApp) over a real control plane on real Kafka, under a fresh topic prefix.
 */
export interface AdminTestStack {
  kafka: TestKafka;
  producer: Producer;
  controlPlane: ControlPlane;
  /** A new app over the same control plane, e.g. with another token. */
  app(adminToken: string): Promise<FastifyInstance>;
  close(): Promise<void>;
}

export async function startAdminTestStack(): Promise<AdminTestStack> {
  const kafka = await createTestKafka(['controlAccounts', 'controlApiKeys', 'controlMappings', 'controlCrmCredentials', 'controlOwners']);
  const producer = createProducer(kafka.kafka);
  await producer.connect();
  const controlPlane = createControlPlane({ kafka: kafka.kafka, producer, topicPrefix: kafka.prefix, logger: testLogger(), instanceId: 'admin-test' });
  await controlPlane.start();
  const apps: FastifyInstance[] = [];
  return {
    kafka,
    producer,
    controlPlane,
    async app(adminToken) {
      const app = Fastify({
        loggerInstance: testLogger() as FastifyBaseLogger,
        genReqId: () => randomUUID(),
        requestIdHeader: false,
        ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: true, useDefaults: false } },
      });
      registerJsonBodyParser(app);
      registerErrorHandling(app);
      await app.register(adminRoutes({ controlPlane, adminToken }), { prefix: '/admin/v1' });
      await app.ready();
      apps.push(app);
      return app;
    },
    async close() {
      await Promise.allSettled(apps.map((a) => a.close()));
      await controlPlane.stop();
      await producer.disconnect();
      await kafka.cleanup();
    },
  };
}

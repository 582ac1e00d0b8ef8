import type { ClickHouse, KafkaClient, Logger, Producer, Redis, Registry } from '@ingest/platform';
import { topicName } from '@ingest/platform';
import {
  type AccountJobsReader,
  type ControlPlane,
  createAllowance,
  createAuditReader,
  createAuditWriter,
  createEventValidator,
  type JobStatusStore,
  seenIdsKey,
} from '@ingest/domain';
import {
  createAuditor,
  createBaseApp,
  createIdempotencyStore,
  createIngestMetrics,
  createJobWriter,
  createKeyLastUsedStore,
  createTimeSlicer,
  UploadSlots,
} from '@ingest/http';
import type { FastifyInstance } from 'fastify';
import type { ConsoleConfig } from './config.js';
import { dashboardPlugin } from './dashboard/dashboard.plugin.js';

export interface ConsoleDeps {
  config: ConsoleConfig;
  logger: Logger;
  metrics: Registry;
  producer: Producer;
  redis: Redis;
  controlPlane: ControlPlane;
  jobStatus: JobStatusStore & AccountJobsReader;
  /** The dashboard's reads: the allowance history (its Usage page), the event debugger, the activity page. */
  ch: ClickHouse;
  /** For the dashboard's dead letters (read and replay); without it they answer 503. */
  kafka?: KafkaClient;
  now?: () => number;
}

/**
 * The console's dashboard listener: the owners' dashboard under /dashboard (its pages, assets
 * and /dashboard/api). The admin API is an app of its own (admin/admin.app.ts) on its own
 * listener. Nothing here listens or touches the network at construction time.
 */
export async function buildConsoleApp(deps: ConsoleDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const now = deps.now ?? Date.now;
  // The namespace the dashboard's per-address limit had on the gateway: replicas of both
  // versions count together during the upgrade.
  const app = await createBaseApp(deps, { rateLimitNamespace: 'ratelimit:' });
  const topicPrefix = config.KAFKA_TOPIC_PREFIX;
  await app.register(
    dashboardPlugin({
      ...deps,
      allowance: createAllowance({ redis: deps.redis, now, keyPrefix: config.REDIS_KEY_PREFIX, seenIdsKey: seenIdsKey(config).key }),
      keyLastUsed: createKeyLastUsedStore({ redis: deps.redis, logger: deps.logger, keyPrefix: config.REDIS_KEY_PREFIX, now }),
      // CSV uploads take the public API's path: the same job writer, idempotency and metrics.
      jobs: createJobWriter({ producer: deps.producer, chunksTopic: topicName(topicPrefix, 'jobChunks'), statusStore: deps.jobStatus, now }),
      idempotency: createIdempotencyStore({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX }),
      ingestMetrics: createIngestMetrics(deps.metrics),
      uploadSlots: new UploadSlots({ perAccount: config.GATEWAY_MAX_UPLOADS_PER_ACCOUNT, perAddress: config.GATEWAY_MAX_UPLOADS_PER_ADDRESS }, deps.metrics),
      slicer: createTimeSlicer(),
      validateEvent: createEventValidator({ maxFutureMs: config.MAX_FUTURE_SKEW_MS }),
      now,
      audit: {
        auditor: createAuditor({ writer: createAuditWriter(deps.producer, topicName(topicPrefix, 'auditLog')), now }),
        reader: createAuditReader(deps.ch),
      },
    }),
    { prefix: '/dashboard' },
  );
  return app;
}

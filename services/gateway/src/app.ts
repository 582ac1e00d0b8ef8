import { type ClickHouse, type KafkaClient, type Logger, type Producer, type Redis, type Registry, topicName } from '@ingest/platform';
import {
  type ControlPlane,
  createAllowance,
  createAuditReader,
  createAuditWriter,
  createEventValidator,
  createSyncStateStore,
  type JobStatusStore,
  type AccountJobsReader,
} from '@ingest/domain';
import { createAuditor } from './audit/auditor.js';
import type { FastifyInstance } from 'fastify';
import { authOf, createAuthHook } from './auth/auth.hook.js';
import { createKeyUsage } from './auth/key-usage.js';
import { registerPublishableCors } from './auth/publishable-cors.js';
import { bulkRoutes } from './bulk/bulk.route.js';
import { type GatewayConfig, gatewayServes } from './config.js';
import { createBaseApp, registerOpenApi } from './http/base-app.js';
import { createTimeSlicer } from './http/time-slicer.js';
import { csvRoutes } from './csv/csv.route.js';
import { dashboardPlugin } from './dashboard/dashboard.plugin.js';
import { eventReadRoutes } from './events/event-read.route.js';
import { createClickHouseEventStore } from './events/event-store.js';
import { eventsRoutes } from './events/events.route.js';
import { createIngestMetrics } from './events/ingest-metrics.js';
import { createIdempotencyStore } from './jobs/idempotency.store.js';
import { createJobWriter } from './jobs/job-writer.js';
import { jobsRoutes } from './jobs/jobs.route.js';
import { accountRateHook, accountRateLimitsOf, createAccountRateLimiter } from './limits/account-rate.limiter.js';
import { setQuotaHeaders } from './limits/quota-headers.js';
import { UploadSlots, uploadSlotHooks } from './limits/upload-slots.js';
import { usageRoutes } from './usage/usage.route.js';

export interface GatewayDeps {
  config: GatewayConfig;
  logger: Logger;
  metrics: Registry;
  producer: Producer;
  redis: Redis;
  controlPlane: ControlPlane;
  jobStatus: JobStatusStore & AccountJobsReader;
  /** Read-back of stored events; ingestion itself never waits for ClickHouse. */
  ch: ClickHouse;
  /** For the dashboard's dead letters (read and replay); without it they answer 503. */
  kafka?: KafkaClient;
  now?: () => number;
}

/**
 * Assembles the HTTP API. main.ts and the tests call this with real clients; nothing here
 * listens or touches the network at construction time.
 */
export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const now = deps.now ?? Date.now;
  const app = await createBaseApp(deps, { rateLimitNamespace: 'ratelimit:' });
  // GATEWAY_ROLE: the public API, the console (dashboard), or both.
  const serves = gatewayServes(config.GATEWAY_ROLE);
  // The public document: the admin API has its own, served only by its listener (admin.app.ts).
  if (serves.api)
    await registerOpenApi(app, {
      title: 'Event ingestion API',
      description: 'Product-usage events in; ClickHouse and your CRM out.',
      securityDescription: 'svc_live_... API key',
      jsonPath: '/v1/openapi.json',
      uiPrefix: '/docs',
    });
  const validate = createEventValidator({ maxFutureMs: config.MAX_FUTURE_SKEW_MS });
  const allowance = createAllowance({ redis: deps.redis, now, keyPrefix: config.REDIS_KEY_PREFIX });

  const ingestMetrics = createIngestMetrics(deps.metrics);
  const jobs = createJobWriter({ producer: deps.producer, chunksTopic: topicName(config.KAFKA_TOPIC_PREFIX, 'jobChunks'), statusStore: deps.jobStatus, now });
  const idempotency = createIdempotencyStore({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX });
  // One set of upload slots for the API's and the dashboard's uploads.
  const uploads = new UploadSlots({ perAccount: config.GATEWAY_MAX_UPLOADS_PER_ACCOUNT, perAddress: config.GATEWAY_MAX_UPLOADS_PER_ADDRESS }, deps.metrics);
  const slicer = createTimeSlicer();
  const keyUsage = createKeyUsage({ redis: deps.redis, logger: deps.logger, keyPrefix: config.REDIS_KEY_PREFIX, now });

  await app.register(
    async (v1) => {
      if (!serves.api) return;
      // preParsing: after the rate limiter (route-level onRequest), so unauthenticated requests
      // are counted too, and before the body is read, so nobody unauthenticated makes us parse 16 MiB.
      const authenticate = createAuthHook(deps.controlPlane, keyUsage.touched);
      // Fail closed at start: a /v1 route without a scope would be open to every key.
      v1.addHook('onRoute', (route) => {
        if (route.method !== 'OPTIONS' && route.config?.apiScope === undefined)
          throw new Error(`route ${String(route.method)} ${route.url} declares no apiScope`);
      });
      v1.addHook('preParsing', async (request, _reply, payload) => {
        // CORS preflights carry no key (publishable-cors.ts answers them).
        if (request.method !== 'OPTIONS') await authenticate(request);
        return payload;
      });
      // preValidation: the body is parsed (its events are counted) but nothing else was spent.
      v1.addHook(
        'preValidation',
        accountRateHook(createAccountRateLimiter({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX, limits: accountRateLimitsOf(config) }), {
          failOpen: config.RATE_LIMIT_FAIL_OPEN,
          metrics: deps.metrics,
        }),
      );
      await registerPublishableCors(v1, deps.controlPlane);
      // Every authenticated response carries the allowance; routes that reserved set it already.
      v1.addHook('onSend', async (request, reply) => {
        if (!request.auth) return;
        try {
          setQuotaHeaders(reply, reply.quotaState ?? (await allowance.state(request.auth.account)));
        } catch (err) {
          request.log.warn({ err }, 'quota headers unavailable');
        }
      });
      await v1.register(
        eventsRoutes({
          producer: deps.producer,
          rawTopic: topicName(config.KAFKA_TOPIC_PREFIX, 'eventsRaw'),
          allowance,
          validate,
          metrics: ingestMetrics,
          now,
        }),
      );
      const uploadSlots = uploadSlotHooks(uploads, deps.metrics, (request) => authOf(request).account.id);
      await v1.register(bulkRoutes({ jobs, allowance, idempotency, metrics: ingestMetrics, uploadSlots }));
      await v1.register(csvRoutes({ jobs, allowance, idempotency, metrics: ingestMetrics, uploadSlots, slicer }));
      await v1.register(
        eventReadRoutes({
          store: createClickHouseEventStore(deps.ch),
          syncStates: createSyncStateStore({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX }),
        }),
      );
      await v1.register(jobsRoutes({ statusStore: deps.jobStatus }));
      await v1.register(usageRoutes({ allowance }));
    },
    { prefix: '/v1' },
  );
  // The dashboard writes the control plane (keys, owners, mappings): the console's job.
  if (serves.console)
    await app.register(
      dashboardPlugin({
        ...deps,
        allowance,
        keyUsage,
        jobs,
        idempotency,
        ingestMetrics,
        uploadSlots: uploads,
        slicer,
        validateEvent: validate,
        now,
        audit: {
          auditor: createAuditor({ writer: createAuditWriter(deps.producer, topicName(config.KAFKA_TOPIC_PREFIX, 'auditLog')), now }),
          reader: createAuditReader(deps.ch),
        },
      }),
      {
        prefix: '/dashboard',
      },
    );

  return app;
}

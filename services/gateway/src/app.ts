import { type ClickHouse, type Logger, type Producer, type Redis, type Registry, topicName } from '@ingest/platform';
import {
  type ControlPlane,
  createAllowance,
  createEventValidator,
  createSyncStateStore,
  type JobStatusStore,
  type AccountJobsReader,
  seenIdsKey,
} from '@ingest/domain';
import type { FastifyInstance } from 'fastify';
import {
  createBaseApp,
  createClickHouseEventStore,
  createIdempotencyStore,
  createIngestMetrics,
  createJobWriter,
  createKeyLastUsedStore,
  createTimeSlicer,
  registerOpenApi,
  setAllowanceHeaders,
  uploadSlotHooks,
  UploadSlots,
} from '@ingest/http';
import { allowanceRoutes } from './allowance/allowance.routes.js';
import { authOf, createAuthHook } from './auth/auth.hook.js';
import { registerPublishableCors } from './auth/publishable-cors.js';
import { bulkRoutes } from './bulk/bulk.routes.js';
import type { GatewayConfig } from './config.js';
import { csvRoutes } from './csv/csv.routes.js';
import { eventReadRoutes } from './events/event-read.routes.js';
import { eventsRoutes } from './events/events.routes.js';
import { jobsRoutes } from './jobs/jobs.routes.js';
import { segmentRoutes } from './segment/segment.routes.js';
import { accountAdmission, accountRateHook, accountRateLimitsOf, createAccountRateLimiter } from './limits/account-rate.limiter.js';
import { createEventsAdmission } from './limits/admission.js';

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
  // The public document: the admin API has its own, served by the console's admin listener.
  await registerOpenApi(app, {
    title: 'Event ingestion API',
    description: 'Product-usage events in; ClickHouse and your CRM out.',
    securityDescription: 'svc_live_... API key',
    jsonPath: '/v1/openapi.json',
    uiPrefix: '/docs',
  });
  const validate = createEventValidator({ maxFutureMs: config.MAX_FUTURE_SKEW_MS });
  const allowance = createAllowance({ redis: deps.redis, now, keyPrefix: config.REDIS_KEY_PREFIX, seenIdsKey: seenIdsKey(config).key });

  const ingestMetrics = createIngestMetrics(deps.metrics);
  const jobs = createJobWriter({ producer: deps.producer, chunksTopic: topicName(config.KAFKA_TOPIC_PREFIX, 'jobChunks'), statusStore: deps.jobStatus, now });
  const idempotency = createIdempotencyStore({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX });
  const uploads = new UploadSlots({ perAccount: config.GATEWAY_MAX_UPLOADS_PER_ACCOUNT, perAddress: config.GATEWAY_MAX_UPLOADS_PER_ADDRESS }, deps.metrics);
  const slicer = createTimeSlicer();
  const keyLastUsed = createKeyLastUsedStore({ redis: deps.redis, logger: deps.logger, keyPrefix: config.REDIS_KEY_PREFIX, now });

  await app.register(
    async (v1) => {
      // preParsing: after the rate limiter (route-level onRequest), so unauthenticated requests
      // are counted too, and before the body is read, so nobody unauthenticated makes us parse 16 MiB.
      const authenticate = createAuthHook(deps.controlPlane, keyLastUsed.touched);
      // Fail closed at start: a /v1 route without a scope would be open to every key.
      v1.addHook('onRoute', (route) => {
        if (route.method !== 'OPTIONS' && route.config?.apiScope === undefined)
          throw new Error(`route ${String(route.method)} ${route.url} declares no apiScope`);
      });
      v1.addHook('preParsing', async (request, _reply, payload) => {
        // CORS preflights carry no key (publishable-cors.ts answers them).
        if (request.method !== 'OPTIONS' && request.routeOptions.config.keyIn !== 'body') await authenticate(request);
        return payload;
      });
      // Segment's browser routes carry the key in the body (small: their bodyLimit is 64 KiB).
      v1.addHook('preValidation', async (request) => {
        if (request.routeOptions.config.keyIn === 'body') await authenticate(request);
      });
      // preHandler: after the body is parsed (its events are counted) and its envelope checked,
      // so a request no wait can make acceptable (10,001 events, a wrong shape) is its 400, never
      // a 429 to retry; nothing else (allowance, Kafka) was spent yet. Before the CORS hook below.
      const rateLimits = accountRateLimitsOf(config);
      const limiter = createAccountRateLimiter({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX, limits: rateLimits });
      const admission = accountAdmission(limiter, { failOpen: config.RATE_LIMIT_FAIL_OPEN, metrics: deps.metrics });
      v1.addHook('preHandler', accountRateHook(admission));
      // POST /v1/events asks for its ceilings and its allowance in one Redis call (admission.ts).
      const eventsAdmission = createEventsAdmission({
        redis: deps.redis,
        keyPrefix: config.REDIS_KEY_PREFIX,
        limits: rateLimits,
        allowance,
        admission,
      });
      await registerPublishableCors(v1, deps.controlPlane);
      // Every authenticated response carries the allowance; routes that reserved set it already.
      v1.addHook('onSend', async (request, reply) => {
        if (!request.auth) return;
        try {
          setAllowanceHeaders(reply, reply.allowanceState ?? (await allowance.state(request.auth.account)));
        } catch (err) {
          request.log.warn({ err }, 'quota headers unavailable');
        }
      });
      await v1.register(
        eventsRoutes({
          admission: eventsAdmission,
          producer: deps.producer,
          rawTopic: topicName(config.KAFKA_TOPIC_PREFIX, 'eventsRaw'),
          allowance,
          validate,
          metrics: ingestMetrics,
          now,
        }),
      );
      await v1.register(
        segmentRoutes({
          producer: deps.producer,
          rawTopic: topicName(config.KAFKA_TOPIC_PREFIX, 'eventsRaw'),
          deadLetterTopic: topicName(config.KAFKA_TOPIC_PREFIX, 'deadLetters'),
          allowance,
          validate: createEventValidator({ maxFutureMs: config.MAX_FUTURE_SKEW_MS, requireContact: false }),
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
      await v1.register(allowanceRoutes({ allowance }));
    },
    { prefix: '/v1' },
  );
  return app;
}

import { randomUUID } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import {
  type ClickHouse,
  type ControlPlane,
  createAllowance,
  createEventValidator,
  createLedgerReader,
  createLedgerWriter,
  createOutboundPolicy,
  createRecordStateReader,
  createSyncStateStore,
  type JobStatusStore,
  type KafkaClient,
  type AccountJobsReader,
  type Logger,
  METRIC_NAMES,
  type Producer,
  type Redis,
  type Registry,
  topicName,
} from '@ingest/shared';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { Counter } from 'prom-client';
import { adminRoutes } from './admin/admin.routes.js';
import { createAuthHook } from './auth/auth.hook.js';
import { createKeyUsage } from './auth/key-usage.js';
import { bulkRoutes } from './bulk/bulk.route.js';
import { type GatewayConfig, parseTrustProxy } from './config.js';
import { csvRoutes } from './csv/csv.route.js';
import { dashboardPlugin } from './dashboard/dashboard.plugin.js';
import { eventReadRoutes } from './events/event-read.route.js';
import { createClickHouseEventStore } from './events/event-store.js';
import { eventsRoutes } from './events/events.route.js';
import { createIngestMetrics } from './events/ingest-metrics.js';
import { registerErrorHandling } from './http/error-handler.js';
import { registerHttpMetrics } from './http/http-metrics.js';
import { registerJsonBodyParser } from './http/json-body.js';
import { ProblemError } from './http/problem.js';
import { createIdempotencyStore } from './jobs/idempotency.store.js';
import { createJobWriter } from './jobs/job-writer.js';
import { jobsRoutes } from './jobs/jobs.route.js';
import { setQuotaHeaders } from './limits/quota-headers.js';
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
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    trustProxy: parseTrustProxy(config.GATEWAY_TRUST_PROXY),
    bodyLimit: 1024 * 1024,
    genReqId: () => randomUUID(),
    // Path parameters carry caller-chosen eventIds of up to 255 characters (default limit 100).
    routerOptions: { maxParamLength: 512 },
    requestIdHeader: false,
    return503OnClosing: true,
    // Unknown keys are refused, not silently removed; types are not coerced.
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: true, useDefaults: false } },
  });

  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  registerHttpMetrics(app, deps.metrics);
  registerJsonBodyParser(app);

  const rateLimitRefusals = new Counter({ name: METRIC_NAMES.rateLimitRefusals, help: 'Requests refused with 429', registers: [deps.metrics] });
  await app.register(rateLimit, {
    global: true,
    max: config.RATE_LIMIT_PER_MINUTE,
    timeWindow: 60_000,
    redis: deps.redis,
    nameSpace: `${config.REDIS_KEY_PREFIX}ratelimit:`,
    // Redis away: serve rather than refuse everyone; the allowance still fails closed.
    skipOnError: true,
    enableDraftSpec: true,
    onExceeded: () => rateLimitRefusals.inc(),
    errorResponseBuilder: (_request, context) =>
      new ProblemError('rateLimited', `At most ${context.max} requests per minute per client address; retry in ${context.after}.`),
  });
  registerErrorHandling(app, app.rateLimit());

  await app.register(swagger, {
    // Components named after the schemas' $id (EventsReceipt, ProblemDetails...) instead of def-N.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Event ingestion API', version: '1.0.0', description: 'Product-usage events in; ClickHouse and your CRM out.' },
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: 'svc_live_... API key' } } },
      security: [{ apiKey: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  app.get('/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const validate = createEventValidator({ maxFutureMs: config.MAX_FUTURE_SKEW_MS });
  const allowance = createAllowance({ redis: deps.redis, now, keyPrefix: config.REDIS_KEY_PREFIX });
  if (config.ADMIN_TOKEN) {
    // The sink's key prefix is the same REDIS_KEY_PREFIX, so the dry-run reads the state the sink applies events to.
    const recordStates = createRecordStateReader({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX });
    const billing = {
      ledger: createLedgerWriter(deps.producer, topicName(config.KAFKA_TOPIC_PREFIX, 'billingLedger')),
      reader: createLedgerReader(deps.ch),
      periodUsage: allowance.periodUsage,
    };
    const outboundPolicy = createOutboundPolicy({ allowHttp: config.CRM_ALLOW_HTTP, allowedCidrs: config.CRM_ALLOWED_CIDRS });
    await app.register(
      adminRoutes({ controlPlane: deps.controlPlane, adminToken: config.ADMIN_TOKEN, validateEvent: validate, recordStates, billing, outboundPolicy, now }),
      {
        prefix: '/admin/v1',
      },
    );
  }

  const ingestMetrics = createIngestMetrics(deps.metrics);
  const jobs = createJobWriter({ producer: deps.producer, chunksTopic: topicName(config.KAFKA_TOPIC_PREFIX, 'jobChunks'), statusStore: deps.jobStatus, now });
  const idempotency = createIdempotencyStore({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX });
  const keyUsage = createKeyUsage({ redis: deps.redis, logger: deps.logger, keyPrefix: config.REDIS_KEY_PREFIX, now });

  await app.register(
    async (v1) => {
      // preParsing: after the rate limiter (route-level onRequest), so unauthenticated requests
      // are counted too, and before the body is read, so nobody unauthenticated makes us parse 16 MiB.
      const authenticate = createAuthHook(deps.controlPlane, keyUsage.touched);
      v1.addHook('preParsing', async (request, _reply, payload) => {
        await authenticate(request);
        return payload;
      });
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
      await v1.register(bulkRoutes({ jobs, allowance, idempotency, metrics: ingestMetrics }));
      await v1.register(csvRoutes({ jobs, allowance, idempotency, metrics: ingestMetrics }));
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
  await app.register(dashboardPlugin({ ...deps, allowance, keyUsage, jobs, idempotency, ingestMetrics, validateEvent: validate, now }), {
    prefix: '/dashboard',
  });

  return app;
}

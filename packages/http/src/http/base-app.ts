import { randomUUID } from 'node:crypto';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { type Logger, METRIC_NAMES, type Redis, type Registry, sharedCounter } from '@ingest/platform';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest } from 'fastify';
import { type HttpListenerSettings, parseTrustProxy } from './http.config.js';
import { registerErrorHandling } from './error-handler.js';
import { registerHttpMetrics } from './http.metrics.js';
import { registerJsonBodyParser } from './json-body.js';
import { registerRequestDecoding } from './request-decoding.js';
import { rateLimitStore } from '../limits/rate-limit.store.js';
import { setRateLimitFields } from '../limits/rate-limit-fields.js';
import { ProblemError } from './problem.js';
import { DOCS_CSP, registerHsts } from './security-headers.js';
import { registerEarlyRefusalDrain } from './early-refusal.js';
import { createTimeoutCounter, type HttpTimeouts, registerBodyIdleTimeout, timeoutServerOptions } from './timeouts.js';

export interface BaseAppDeps {
  config: HttpListenerSettings;
  logger: Logger;
  metrics: Registry;
  redis: Redis;
}

/**
 * What every HTTP listener has, the gateway's public API and the console's dashboard and admin API alike: the
 * timeouts of slow clients, request ids, RED metrics, the JSON body parser, compressed request
 * bodies (request-decoding.ts), the per-address
 * rate limit (in Redis, under its own `rateLimitNamespace`), the RateLimit-Policy / RateLimit
 * fields of every limit that applied, problem+json errors, and connections that survive an early
 * refusal (early-refusal.ts).
 */
export async function createBaseApp(deps: BaseAppDeps, options: { rateLimitNamespace: string }): Promise<FastifyInstance> {
  const { config } = deps;
  const timeouts: HttpTimeouts = {
    requestMs: config.GATEWAY_REQUEST_TIMEOUT_MS,
    headersMs: config.GATEWAY_HEADERS_TIMEOUT_MS,
    bodyIdleMs: config.GATEWAY_BODY_IDLE_TIMEOUT_MS,
    keepAliveMs: config.GATEWAY_KEEP_ALIVE_TIMEOUT_MS,
  };
  const timeoutCounter = createTimeoutCounter(deps.metrics);
  const app = Fastify({
    ...timeoutServerOptions(timeouts, timeoutCounter),
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
    setRateLimitFields(reply);
  });
  registerHsts(app, config.GATEWAY_HSTS_MAX_AGE_SECONDS);
  registerHttpMetrics(app, deps.metrics);
  registerBodyIdleTimeout(app, timeouts, timeoutCounter);
  registerEarlyRefusalDrain(app);
  registerJsonBodyParser(app);
  registerRequestDecoding(app);

  const rateLimitRefusals = sharedCounter(deps.metrics, { name: METRIC_NAMES.rateLimitRefusals, help: 'Requests refused with 429', labelNames: [] });
  await app.register(rateLimit, {
    global: true,
    max: config.RATE_LIMIT_PER_MINUTE,
    timeWindow: 60_000,
    store: rateLimitStore(deps.redis, `${config.REDIS_KEY_PREFIX}${options.rateLimitNamespace}`),
    // Redis away: serve (fail open, the default) or refuse with 503 (RATE_LIMIT_FAIL_OPEN=false).
    // The allowance fails closed either way (docs/limits.md, "When Redis is down").
    skipOnError: config.RATE_LIMIT_FAIL_OPEN,
    enableDraftSpec: true,
    onExceeded: () => rateLimitRefusals.inc(),
    errorResponseBuilder: (_request, context) =>
      new ProblemError('rateLimited', `At most ${context.max} requests per minute per client address; retry in ${context.after}.`, {
        extensions: { limit: 'ip' },
      }),
  });
  registerErrorHandling(app, app.rateLimit());
  return app;
}

/**
 * The OpenAPI document of the routes registered after this on `app`, served as JSON at `jsonPath`
 * and, with `uiPrefix`, browsable there under its own Content-Security-Policy (DOCS_CSP). `guard`
 * runs before the document is sent (the admin API's token): a document behind a guard has no UI,
 * since a browser cannot send the token when the UI fetches it.
 */
export async function registerOpenApi(
  app: FastifyInstance,
  document: {
    title: string;
    description: string;
    securityDescription: string;
    jsonPath: string;
    uiPrefix?: string;
    guard?: (request: FastifyRequest) => Promise<void> | void;
  },
): Promise<void> {
  await app.register(swagger, {
    // Components named after the schemas' $id (EventsReceipt, ProblemDetails...) instead of def-N.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: { title: document.title, version: '1.0.0', description: document.description },
      components: { securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', description: document.securityDescription } } },
      security: [{ apiKey: [] }],
    },
  });
  if (document.uiPrefix !== undefined && document.guard === undefined) {
    // Its own policy on every page and asset of the UI (the plugin's onSend hook is scoped to them).
    await app.register(swaggerUi, { routePrefix: document.uiPrefix, staticCSP: DOCS_CSP });
  }
  const guard = document.guard;
  app.get(document.jsonPath, { schema: { hide: true }, ...(guard ? { onRequest: async (request: FastifyRequest) => guard(request) } : {}) }, async () =>
    app.swagger(),
  );
}

import cors from '@fastify/cors';
import type { ControlPlaneReader } from '@ingest/domain';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** The routes a publishable key may call from a browser; everything else has no CORS at all. */
export const BROWSER_INGEST_PATHS: ReadonlySet<string> = new Set(['/v1/events', '/v1/t', '/v1/i', '/v1/p', '/v1/g', '/v1/a']);
/** Browsers cache a preflight this long (Chromium caps it at 2 h); preflights count against the per-address rate limit. */
export const PREFLIGHT_MAX_AGE_S = 600;

/**
 * CORS for publishable keys (@fastify/cors with a per-request decision), on the /v1 plugin.
 *
 * A preflight carries no Authorization header, so it cannot be matched to an account: it is
 * answered for an ingest path when *some* account allows the origin. The real request then
 * carries the key, and the auth hook refuses a publishable key from an origin its own account
 * does not allow (403 origin_not_allowed) before anything is read or counted; only a
 * publishable key's answer from an allowed origin gets `Access-Control-Allow-Origin`. Secret
 * keys get no CORS headers, exactly as before: a browser cannot read their answers.
 *
 * Runs as a preHandler, after authentication (preParsing), so the key is known; refusals
 * thrown earlier carry no CORS headers and a browser sees them as a network error.
 */
export async function registerPublishableCors(app: FastifyInstance, controlPlane: ControlPlaneReader): Promise<void> {
  const pathOf = (request: FastifyRequest) => request.url.split('?', 1)[0] ?? '';
  await app.register(cors, {
    hook: 'preHandler',
    delegator: (request, callback) => {
      const origin = request.headers.origin;
      const preflight = request.method === 'OPTIONS';
      const allowed =
        origin !== undefined &&
        BROWSER_INGEST_PATHS.has(pathOf(request)) &&
        (preflight
          ? controlPlane.anyAccountAllowsOrigin(origin)
          : request.auth?.keyType === 'publishable' && (request.auth.account.allowedOrigins ?? []).includes(origin));
      callback(null, {
        origin: allowed ? origin : false,
        methods: ['POST'],
        // content-encoding: the SDK's browser build gzips its bodies (CompressionStream).
        // x-retry-count: analytics-next numbers its retries; without it a retry's preflight
        // failed and the browser SDK could never resend (analytics-next.browser.test.ts).
        allowedHeaders: ['authorization', 'content-type', 'content-encoding', 'x-retry-count'],
        exposedHeaders: [
          'x-request-id',
          // The structured RateLimit fields (draft 9), which a client waits by before a 429.
          'ratelimit',
          'ratelimit-policy',
          'ratelimit-limit',
          'ratelimit-remaining',
          'ratelimit-reset',
          'x-quota-limit',
          'x-quota-remaining',
          'x-quota-reset',
          'retry-after',
        ],
        maxAge: PREFLIGHT_MAX_AGE_S,
        credentials: false,
      });
    },
  });
}

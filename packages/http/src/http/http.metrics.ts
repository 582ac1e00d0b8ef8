import { METRIC_NAMES, type Registry, sharedCounter, sharedHistogram } from '@ingest/platform';
import type { FastifyInstance } from 'fastify';

/**
 * RED metrics per route template (never the raw URL: ids in paths would explode cardinality).
 * Unmatched requests share the route label "unmatched".
 */
export function registerHttpMetrics(app: FastifyInstance, registry: Registry): void {
  // The public and the admin listener share one registry, so they share these series too.
  const requests = sharedCounter(registry, {
    name: METRIC_NAMES.httpRequests,
    help: 'HTTP requests by route template and status code',
    labelNames: ['method', 'route', 'status_code'],
  });
  const duration = sharedHistogram(registry, {
    name: METRIC_NAMES.httpRequestDuration,
    help: 'HTTP request duration by route template',
    labelNames: ['method', 'route'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    requests.inc({ method: request.method, route, status_code: String(reply.statusCode) });
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
  });
}

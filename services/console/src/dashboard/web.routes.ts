import { existsSync } from 'node:fs';
import { join } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { ProblemError } from '@ingest/http';
import type { RouteLimits } from './route-options.js';

// Everything the page loads comes from this origin: no inline script, no CDN, no framing.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/**
 * The web app: hashed assets under /dashboard/assets cached for a year (their names change with
 * their content), and index.html (never cached) for every page path, so deep links and reloads work.
 */
export function webRoutes(deps: { webDir: string; limits: RouteLimits }): FastifyPluginAsync {
  return async (app) => {
    // serve: false: our own routes send the files, so they carry the dashboard's rate limit.
    await app.register(fastifyStatic, { root: deps.webDir, serve: false });

    const page = async (_request: unknown, reply: FastifyReply) => {
      if (!existsSync(join(deps.webDir, 'index.html'))) {
        throw new ProblemError('unavailable', 'The dashboard web app is not built; run `npm run build`.');
      }
      return reply
        .header('cache-control', 'no-cache')
        .header('content-security-policy', CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'same-origin')
        .sendFile('index.html', { cacheControl: false });
    };

    app.get('/assets/*', { ...deps.limits.api, schema: { hide: true } }, async (request, reply) => {
      const path = (request.params as { '*': string })['*'];
      return reply.header('x-content-type-options', 'nosniff').sendFile(join('assets', path), { immutable: true, maxAge: '365d' });
    });
    app.get('/', { ...deps.limits.api, schema: { hide: true } }, page);
    app.get('/*', { ...deps.limits.api, schema: { hide: true } }, page);
  };
}

import type { FastifyInstance } from 'fastify';

/**
 * The Swagger UI's own policy (issue 26). Its page loads its scripts and styles from its own
 * static files (no inline script: @fastify/swagger-ui's index.html has none) and fetches the
 * OpenAPI document and, for "Try it out", the API from the same origin. Swagger UI sets inline
 * style attributes, hence 'unsafe-inline' for styles only. No framing (clickjacking), no
 * <base>, no form posts, no plugins: if a crafted document ever injected markup into the page,
 * it could neither run a script nor send data to another origin.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "object-src 'none'",
].join('; ');

/**
 * `Cache-Control: no-store` on every response of `app` (an encapsulated plugin: only its routes):
 * for the surfaces whose answers carry a secret or a token (a new API key or admin credential, the
 * CSRF token, the session), so that no browser, proxy or CDN cache keeps a copy.
 */
export function registerNoStore(app: FastifyInstance): void {
  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
  });
}

/**
 * `Strict-Transport-Security` on answers to requests that came over TLS: TLS terminated at the
 * service, or at a trusted proxy that says so in `X-Forwarded-Proto` (GATEWAY_TRUST_PROXY;
 * without it the header is the client's word and is ignored). Browsers ignore HSTS received over
 * plain http (RFC 6797), so it is never sent there. `maxAgeSeconds` 0 turns it off.
 */
export function registerHsts(app: FastifyInstance, maxAgeSeconds: number): void {
  if (maxAgeSeconds <= 0) return;
  const value = `max-age=${maxAgeSeconds}`;
  app.addHook('onSend', async (request, reply) => {
    if (request.protocol === 'https') reply.header('strict-transport-security', value);
  });
}

/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture: the gateway app as main.ts builds
 * it). Issue 26, item 8, on the real routes:
 * - the Swagger UI at /docs (its page, its assets, its copy of the document) is sent with a
 *   policy of its own (DOCS_CSP): scripts from its own files only, no framing; the API's answers
 *   do not get it;
 * - `Strict-Transport-Security` on answers to requests that came over TLS (here: through a proxy
 *   trusted by GATEWAY_TRUST_PROXY that says `X-Forwarded-Proto: https`), never over plain http,
 *   never on the untrusted client's word, and never with GATEWAY_HSTS_MAX_AGE_SECONDS=0.
 */
import { DOCS_CSP } from '@ingest/http';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let gw: GatewayFixture;
let apiKey: string;

beforeAll(async () => {
  gw = await createGatewayFixture();
  ({ apiKey } = await gw.newAccount());
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const get = (app: FastifyInstance, url: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url, headers, remoteAddress: randomClientIp() });

describe('the Swagger UI', () => {
  it('is sent with its own Content-Security-Policy: page, scripts and its document', async () => {
    const page = await get(gw.app, '/docs/');
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toBe(DOCS_CSP);
    // The page has no inline script for the policy to forbid: every script is a file of its own.
    expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    for (const url of ['/docs/static/swagger-initializer.js', '/docs/static/swagger-ui-bundle.js', '/docs/json']) {
      const res = await get(gw.app, url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-security-policy'], url).toBe(DOCS_CSP);
    }
    expect(DOCS_CSP).toContain("script-src 'self'");
    expect(DOCS_CSP).toContain("frame-ancestors 'none'");
    expect(DOCS_CSP).not.toContain('unsafe-eval');
  });

  it("leaves the API's answers without that policy", async () => {
    const usage = await get(gw.app, '/v1/usage', { authorization: `Bearer ${apiKey}` });
    expect(usage.statusCode).toBe(200);
    expect(usage.headers['content-security-policy']).toBeUndefined();
  });
});

describe('Strict-Transport-Security', () => {
  it('is sent over TLS at a trusted proxy, not over plain http', async () => {
    const behindProxy = await gw.replica({ GATEWAY_TRUST_PROXY: 'true' });
    const overTls = await get(behindProxy, '/v1/usage', { authorization: `Bearer ${apiKey}`, 'x-forwarded-proto': 'https' });
    expect(overTls.statusCode).toBe(200);
    expect(overTls.headers['strict-transport-security']).toBe('max-age=31536000');
    // Also on refusals and on the docs: the whole host is https-only.
    expect((await get(behindProxy, '/v1/usage', { 'x-forwarded-proto': 'https' })).headers['strict-transport-security']).toBe('max-age=31536000');
    expect((await get(behindProxy, '/docs/', { 'x-forwarded-proto': 'https' })).headers['strict-transport-security']).toBe('max-age=31536000');

    const plain = await get(behindProxy, '/v1/usage', { authorization: `Bearer ${apiKey}` });
    expect(plain.headers['strict-transport-security']).toBeUndefined();
  });

  it('is not sent on an untrusted client saying https (the default GATEWAY_TRUST_PROXY=false)', async () => {
    const res = await get(gw.app, '/v1/usage', { authorization: `Bearer ${apiKey}`, 'x-forwarded-proto': 'https' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['strict-transport-security']).toBeUndefined();
  });

  it('is not sent when GATEWAY_HSTS_MAX_AGE_SECONDS is 0', async () => {
    const off = await gw.replica({ GATEWAY_TRUST_PROXY: 'true', GATEWAY_HSTS_MAX_AGE_SECONDS: '0' });
    const res = await get(off, '/v1/usage', { authorization: `Bearer ${apiKey}`, 'x-forwarded-proto': 'https' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['strict-transport-security']).toBeUndefined();
  });
});

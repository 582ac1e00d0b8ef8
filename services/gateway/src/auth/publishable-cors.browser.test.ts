/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture, listening on a loopback port);
 * headless Chromium. A page on an origin the account allows sends events with its publishable
 * key (the browser's own preflight, then the POST, answer readable); the same key from another
 * origin is stopped by the preflight and nothing is counted; the publishable key cannot read
 * usage from the browser; a secret key's answer stays unreadable to pages.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type GatewayFixture, launchChromium, publishableKeyFor, randomClientIp } from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let browser: Browser;
let pages: Server;
let apiUrl: string;
let allowedOrigin: string;
let otherOrigin: string;
let accountId: string;
let publishableKey: string;
let secretKey: string;

beforeAll(async () => {
  gw = await createGatewayFixture();
  apiUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  // One page server, reached under two host names: two origins.
  pages = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>shop</title>'));
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  const port = (pages.address() as AddressInfo).port;
  allowedOrigin = `http://127.0.0.1:${port}`;
  otherOrigin = `http://localhost:${port}`;

  const { account, apiKey } = await gw.newAccount('pro');
  accountId = account.id;
  secretKey = apiKey;
  publishableKey = await publishableKeyFor(gw, accountId, [allowedOrigin]);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => pages?.close(resolve));
  await gw?.close();
});

/** Runs fetch in the page; a CORS refusal is a TypeError there, returned as `{ error }`. */
async function fetchFrom(page: Page, path: string, key: string, method: 'GET' | 'POST' = 'POST') {
  return page.evaluate(
    async ({ url, key, method }) => {
      try {
        const response = await fetch(url, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
          ...(method === 'POST' ? { body: JSON.stringify({ events: [{ eventName: 'Browser Signup', email: 'ada@example.com' }] }) } : {}),
        });
        return { status: response.status, body: await response.text(), quota: response.headers.get('x-quota-remaining') };
      } catch (err) {
        return { error: String(err) };
      }
    },
    { url: `${apiUrl}${path}`, key, method },
  );
}

async function used(): Promise<number> {
  const response = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${secretKey}` }, remoteAddress: randomClientIp() });
  return (response.json() as { used: number }).used;
}

async function pageOn(origin: string): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${origin}/`);
  return page;
}

describe('publishable keys from a browser', () => {
  it('sends events from an allowed origin: the preflight passes and the answer is readable', async () => {
    const page = await pageOn(allowedOrigin);
    const before = await used();
    const result = await fetchFrom(page, '/v1/events', publishableKey);
    expect(result, JSON.stringify(result)).toMatchObject({ status: 202 });
    expect(JSON.parse((result as { body: string }).body)).toMatchObject({ accepted: 1, rejected: 0 });
    // Exposed headers: the page can see its allowance.
    expect((result as { quota: string | null }).quota).toMatch(/^\d+$/);
    expect(await used()).toBe(before + 1);
    await page.close();
  });

  it('takes a gzip body from an allowed origin (the SDK compresses) and lets the page read the RateLimit fields', async () => {
    const page = await pageOn(allowedOrigin);
    const before = await used();
    const result = await page.evaluate(
      async ({ url, key }) => {
        try {
          const json = new Blob([JSON.stringify({ events: [{ eventName: 'Browser Gzip', email: 'ada@example.com' }] })]);
          const body = await new Response(json.stream().pipeThrough(new CompressionStream('gzip'))).arrayBuffer();
          const response = await fetch(url, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
            body,
          });
          return {
            status: response.status,
            body: await response.text(),
            rateLimit: response.headers.get('ratelimit'),
            policy: response.headers.get('ratelimit-policy'),
          };
        } catch (err) {
          return { error: String(err) };
        }
      },
      { url: `${apiUrl}/v1/events`, key: publishableKey },
    );
    expect(result, JSON.stringify(result)).toMatchObject({ status: 202 });
    expect(JSON.parse((result as { body: string }).body)).toMatchObject({ accepted: 1, rejected: 0 });
    expect((result as { rateLimit: string | null }).rateLimit).toMatch(/^"ip";r=\d+;t=\d+/);
    expect((result as { policy: string | null }).policy).toMatch(/^"ip";q=\d+;w=\d+/);
    expect(await used()).toBe(before + 1);
    await page.close();
  });

  it('is stopped by the preflight from an origin the account does not allow, and nothing is counted', async () => {
    const page = await pageOn(otherOrigin);
    const before = await used();
    const result = await fetchFrom(page, '/v1/events', publishableKey);
    expect(result, JSON.stringify(result)).toMatchObject({ error: expect.stringContaining('Failed to fetch') });
    expect(await used()).toBe(before);
    await page.close();
  });

  it('cannot read usage or events from the browser, even from an allowed origin', async () => {
    const page = await pageOn(allowedOrigin);
    for (const path of ['/v1/usage', '/v1/events/evt-1']) {
      const result = await fetchFrom(page, path, publishableKey, 'GET');
      expect(result, `${path}: ${JSON.stringify(result)}`).toMatchObject({ error: expect.stringContaining('Failed to fetch') });
    }
    await page.close();
  });

  it("gives a secret key's answer no CORS headers: a page cannot read it", async () => {
    const page = await pageOn(allowedOrigin);
    const result = await fetchFrom(page, '/v1/events', secretKey);
    expect(result, JSON.stringify(result)).toMatchObject({ error: expect.stringContaining('Failed to fetch') });
    await page.close();
  });

  it('answers preflights without the browser: allowed origin gets the CORS headers, others none', async () => {
    const preflight = (origin: string, url = '/v1/events') =>
      gw.app.inject({
        method: 'OPTIONS',
        url,
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
        remoteAddress: randomClientIp(),
      });
    const ok = await preflight(allowedOrigin);
    expect(ok.statusCode).toBe(204);
    expect(ok.headers).toMatchObject({ 'access-control-allow-origin': allowedOrigin, 'access-control-allow-methods': 'POST', 'access-control-max-age': '600' });
    for (const refused of [await preflight(otherOrigin), await preflight(allowedOrigin, '/v1/usage')]) {
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
      expect(refused.statusCode).toBe(404);
    }
    // The real request from another origin with the key, as a non-browser client could send it: 403.
    const forged = await gw.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { authorization: `Bearer ${publishableKey}`, 'content-type': 'application/json', origin: otherOrigin },
      payload: { events: [{ eventName: 'x', email: 'a@example.com' }] },
      remoteAddress: randomClientIp(),
    });
    expect(forged.statusCode).toBe(403);
    expect(forged.json()).toMatchObject({ code: 'origin_not_allowed' });
  });
});

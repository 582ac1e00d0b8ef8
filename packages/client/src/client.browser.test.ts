/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture, listening on a loopback port);
 * headless Chromium. The browser build (`dist/browser.js`) on a page of an origin the account
 * allows, with its publishable key: it sends through the page's own fetch and CORS, and what is
 * still queued when the page goes away leaves with a keepalive request and is counted.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, launchChromium, publishableKeyFor, randomClientIp } from '@ingest/testkit/gateway';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBrowserBundle } from './build/client-package.js';

let gw: GatewayFixture;
let browser: Browser;
let pages: Server;
let work: string;
let apiUrl: string;
let origin: string;

/** A fresh account allowing the page's origin: its publishable key and a way to read its usage. */
async function browserAccount() {
  const { account, apiKey } = await gw.newAccount('pro');
  const publishable = await publishableKeyFor(gw, account.id, [origin]);
  await waitFor(() => gw.controlPlane.listApiKeys(account.id).length === 2, { description: 'both keys in the control plane', timeoutMs: 10_000 });
  const used = async () => {
    const r = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() });
    return (r.json() as { used: number }).used;
  };
  return { publishable, used };
}

/** Loads the browser build into the page and makes a client on `window.ingest`. */
async function clientInPage(page: Page, key: string, intervalMs: number) {
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => (globalThis as unknown as { sdk?: unknown }).sdk !== undefined);
  await page.evaluate(
    ({ apiUrl, key, intervalMs }) => {
      const g = globalThis as unknown as { sdk: { createBrowserClient(o: object): unknown }; ingest: unknown };
      g.ingest = g.sdk.createBrowserClient({ apiKey: key, baseUrl: apiUrl, batch: { intervalMs } });
    },
    { apiUrl, key, intervalMs },
  );
}

beforeAll(async () => {
  gw = await createGatewayFixture();
  apiUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  work = mkdtempSync(join(tmpdir(), 'ingest-client-browser-'));
  await buildBrowserBundle(join(work, 'sdk.js'));
  const sdk = readFileSync(join(work, 'sdk.js'));
  pages = createServer((req, res) => {
    if (req.url === '/sdk.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(sdk);
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<!doctype html><title>shop</title><script type="module">import * as sdk from "/sdk.js"; globalThis.sdk = sdk;</script>');
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;
  browser = await launchChromium();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => pages?.close(resolve));
  rmSync(work, { recursive: true, force: true });
  await gw?.close();
});

type PageClient = { track(e: object): Promise<unknown>; flush(): Promise<void>; stats(): Record<string, number> };

describe('the browser build', () => {
  it('sends from the page with a publishable key: batched, through CORS, each event counted', async () => {
    const { publishable, used } = await browserAccount();
    const page = await browser.newPage();
    await clientInPage(page, publishable, 60_000);
    const stats = await page.evaluate(async () => {
      const c = (globalThis as unknown as { ingest: PageClient }).ingest;
      for (let i = 0; i < 120; i++) await c.track({ eventName: 'Viewed', email: `v${i}@example.com` });
      await c.flush();
      return c.stats();
    });
    expect(stats).toMatchObject({ accepted: 120, failed: 0, rejected: 0, requests: 2 });
    expect(await used()).toBe(120);
    await page.close();
  });

  it('what is queued when the page goes away leaves with a keepalive request and is counted', async () => {
    const { publishable, used } = await browserAccount();
    const page = await browser.newPage();
    await clientInPage(page, publishable, 600_000);
    const queued = await page.evaluate(async () => {
      const c = (globalThis as unknown as { ingest: PageClient }).ingest;
      for (let i = 0; i < 30; i++) await c.track({ eventName: 'Read Article', email: `r${i}@example.com`, properties: { i } });
      return c.stats();
    });
    // Nothing sent yet: the interval is ten minutes away.
    expect(queued).toMatchObject({ queued: 30, requests: 0 });
    expect(await used()).toBe(0);
    await page.goto('about:blank');
    await waitFor(
      async () => {
        const n = await used();
        if (n !== 30) throw new Error(`used ${n}`);
        return true;
      },
      { description: 'the 30 events sent on page hide counted', timeoutMs: 15_000, intervalMs: 100 },
    );
    await page.close();
  });
});

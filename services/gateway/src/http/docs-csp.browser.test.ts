/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture, listening on a loopback port);
 * headless Chromium. The Swagger UI at /docs works under its own Content-Security-Policy
 * (DOCS_CSP, issue 26): it renders the API's document and Chromium reports no violation, so
 * the policy forbids nothing the UI needs (no inline script, no eval, no other origin); and a
 * page of another origin cannot frame it.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type GatewayFixture, launchChromium, screenshot } from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let browser: Browser;
let apiUrl: string;
let framer: Server;
let framerUrl: string;

beforeAll(async () => {
  gw = await createGatewayFixture();
  apiUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  framer = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>framer</title><iframe id="docs" src="${apiUrl}/docs/"></iframe>`),
  );
  await new Promise<void>((resolve) => framer.listen(0, '127.0.0.1', resolve));
  // Another origin: the other loopback name.
  framerUrl = `http://localhost:${(framer.address() as AddressInfo).port}/`;
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => framer?.close(resolve));
  await gw?.close();
});

describe('the Swagger UI under its Content-Security-Policy', () => {
  it('renders the API document with no violation reported', async () => {
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) violations.push(message.text());
    });
    try {
      const response = await page.goto(`${apiUrl}/docs/`);
      expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
      await page.waitForSelector('.information-container .title', { timeout: 15_000 });
      expect(await page.textContent('.information-container .title')).toContain('Event ingestion API');
      // The operations of the document are listed: the UI fetched and rendered it.
      await page.waitForSelector('.opblock-summary-path[data-path="/v1/events"]', { timeout: 15_000 });
      expect(violations).toEqual([]);
    } catch (err) {
      const shot = await screenshot(page, 'docs-csp');
      throw new Error(`${(err as Error).message}\nviolations: ${JSON.stringify(violations)}\nscreenshot: ${shot}`, { cause: err });
    } finally {
      await page.close();
    }
  }, 40_000);

  it('refuses to be framed by another origin', async () => {
    const page = await browser.newPage();
    const refusals: string[] = [];
    page.on('console', (message) => {
      if (/frame-ancestors|Refused to frame/i.test(message.text())) refusals.push(message.text());
    });
    try {
      await page.goto(framerUrl);
      await expect.poll(() => refusals.length, { timeout: 10_000, message: `console refusals so far: ${JSON.stringify(refusals)}` }).toBeGreaterThan(0);
      // Nothing of the UI was rendered inside the frame.
      const frame = page.frames().find((f) => f.url().startsWith(apiUrl));
      const rendered = frame ? await frame.$('.information-container').catch(() => null) : null;
      expect(rendered).toBeNull();
    } finally {
      await page.close();
    }
  }, 30_000);
});

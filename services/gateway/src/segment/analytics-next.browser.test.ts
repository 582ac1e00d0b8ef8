/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture, listening on a loopback port) and
 * the real processor in this process (dedupe, storage); headless Chromium. Segment's browser SDK
 * from npm, `@segment/analytics-next`, unchanged: bundled for the page by esbuild, loaded on a
 * page of an origin the account allows, with a publishable key and the gateway as `apiHost`
 * (docs/segment.md, "What to change"). Its settings are given inline (`cdnSettings`), so it
 * fetches nothing from Segment's CDN: every request to any other host fails the test. Issue 29,
 * item 6: track, identify, page, group and alias are each stored once (also the one the SDK
 * sends again after its first answer was lost), counted in the usage, readable by
 * `GET /v1/events/pk:<messageId>` with a secret key.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import type { Browser, BrowserContext } from 'playwright-core';
import { type Component, sql } from '@ingest/platform';
import { waitFor } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, launchChromium, publishableKeyFor, randomClientIp } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerLosingProducer } from './lost-answer.fixture.js';

let gw: GatewayFixture;
let parts: Component[] = [];
let browser: Browser;
let context: BrowserContext;
let pages: Server;
let apiUrl: string;
let origin: string;
let accountId: string;
let publishableKey: string;
let secretKey: string;
/** Requests the page made to any host but its own and the gateway (analytics-next's CDN, metrics). */
const elsewhere: string[] = [];
/** The next events.raw write holding the given text is written, then reported lost (504): the SDK retries. */
const lossy = answerLosingProducer();

/** analytics-next as a page script: its npm build, bundled with its dynamic imports inlined. */
async function bundleAnalyticsNext(): Promise<string> {
  const out = await build({
    entryPoints: [fileURLToPath(new URL('./analytics-next.page.fixture.ts', import.meta.url))],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    write: false,
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  return out.outputFiles[0]?.text ?? '';
}

beforeAll(async () => {
  const script = await bundleAnalyticsNext();
  gw = await createGatewayFixture({}, { producer: lossy.wrap });
  parts = await startProcessorFor(gw, 'analytics-next');
  apiUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  pages = createServer((req, res) => {
    if (req.url === '/ajs.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    else res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>shop</title><script src="/ajs.js"></script>');
  });
  await new Promise<void>((resolve) => pages.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;

  const { account, apiKey } = await gw.newAccount('pro');
  accountId = account.id;
  secretKey = apiKey;
  publishableKey = await publishableKeyFor(gw, accountId, [origin]);
  await waitFor(() => gw.controlPlane.listApiKeys(accountId).length === 2 && (gw.controlPlane.accountById(accountId)?.allowedOrigins ?? []).includes(origin), {
    description: 'the publishable key and the origin in the gateway\u2019s control plane',
    timeoutMs: 10_000,
  });

  browser = await launchChromium();
  context = await browser.newContext();
  // Watched, not routed: routing in Playwright answers CORS preflights itself, and the
  // gateway's own preflight answers are part of what this test proves.
  context.on('request', (request) => {
    const url = request.url();
    if (!url.startsWith(`${origin}/`) && !url.startsWith(`${apiUrl}/`)) elsewhere.push(url);
  });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => pages?.close(resolve));
  for (const part of [...parts].reverse()) await part.stop();
  await gw?.close();
});

const get = (url: string) => gw.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${secretKey}` }, remoteAddress: randomClientIp() });

describe('@segment/analytics-next in Chromium against the gateway', () => {
  it('stores track, identify, page, group and alias once each (a retried track too), counts them, and reads them back by pk:<messageId>', async () => {
    const page = await context.newPage();
    lossy.loseNextAnswerTo('"pk:ajs-track"');
    await page.goto(`${origin}/`);
    const errors = await page.evaluate(
      async ({ writeKey, apiHost }) => {
        type Sdk = {
          identify(id: string, traits: object, options: object): Promise<unknown>;
          track(event: string, properties: object, options: object): Promise<unknown>;
          page(category: string, name: string, properties: object, options: object): Promise<unknown>;
          group(id: string, traits: object, options: object): Promise<unknown>;
          alias(to: string, from: string, options: object): Promise<unknown>;
          on(event: 'error', listener: (e: { code?: string; reason?: unknown }) => void): void;
        };
        const { AnalyticsBrowser } = globalThis as unknown as { AnalyticsBrowser: { load(settings: object): PromiseLike<[Sdk, unknown]> } };
        // What a site sets to send to its own gateway instead of api.segment.io (no CDN fetch).
        const [analytics] = await AnalyticsBrowser.load({
          writeKey,
          cdnSettings: { integrations: { 'Segment.io': { apiKey: writeKey, apiHost, protocol: 'http' } } },
        });
        const failures: string[] = [];
        analytics.on('error', (e) => failures.push(`${e.code}: ${String(e.reason)}`));
        await analytics.identify('ajs-user', { email: 'Ada@Acme.io', plan: 'pro' }, { messageId: 'ajs-identify' });
        await analytics.track('Pricing Viewed', { plan: 'pro' }, { messageId: 'ajs-track' });
        await analytics.page('Docs', 'Pricing', {}, { messageId: 'ajs-page' });
        await analytics.group('g-1', { website: 'https://www.acme.io' }, { messageId: 'ajs-group' });
        await analytics.alias('ajs-user', 'anon-before', { messageId: 'ajs-alias' });
        return failures;
      },
      { writeKey: publishableKey, apiHost: `${apiUrl.replace(/^http:\/\//, '')}/v1` },
    );
    expect(errors).toEqual([]);

    const ids = ['pk:ajs-alias', 'pk:ajs-group', 'pk:ajs-identify', 'pk:ajs-page', 'pk:ajs-track'];
    const rows = await waitFor(
      async () => {
        const stored = await gw.clickhouse.ch.query<{ event_id: string; event_name: string; email: string; domain: string }>(
          sql`SELECT event_id, event_name, email, domain FROM events FINAL WHERE account_id = ${accountId} ORDER BY event_id`,
        );
        if (stored.length < ids.length) throw new Error(`stored so far: ${JSON.stringify(stored)}; elsewhere: ${JSON.stringify(elsewhere)}`);
        return stored;
      },
      { description: 'the five browser messages stored', timeoutMs: 60_000 },
    );
    expect(rows.map((r) => r.event_id)).toEqual(ids);
    expect(rows.map((r) => r.event_name)).toEqual(['$alias', '$group', '$identify', '$page', 'Pricing Viewed']);
    expect(rows.find((r) => r.event_id === 'pk:ajs-identify')?.email).toBe('ada@acme.io');
    expect(rows.find((r) => r.event_id === 'pk:ajs-group')?.domain).toBe('acme.io');
    expect(lossy.lost).toBe(1);

    // The lost answer's track reached events.raw twice (the SDK's retry); dedupe passed one on.
    const { values } = await gw.readTopic<{ accountId: string; eventId: string }>(
      'eventsUnique',
      (v) => v.filter((r) => r.accountId === accountId).length >= ids.length,
      'the account\u2019s unique events',
    );
    const unique = values.filter((r) => r.accountId === accountId).map((r) => r.eventId);
    expect(unique.sort()).toEqual(ids);
    const raw = await gw.readTopic<{ accountId: string; eventId: string }>(
      'eventsRaw',
      (v) => v.filter((r) => r.accountId === accountId && r.eventId === 'pk:ajs-track').length >= 2,
      'the retried track twice in events.raw',
    );
    expect(raw.values.filter((r) => r.accountId === accountId && r.eventId === 'pk:ajs-track')).toHaveLength(2);

    const usage = await get('/v1/usage');
    expect(usage.json().used, usage.body).toBe(ids.length);
    for (const id of ids) {
      const read = await get(`/v1/events/${encodeURIComponent(id)}`);
      expect(read.statusCode, `${id}: ${read.body}`).toBe(200);
    }
    expect((await get('/v1/events/pk%3Aajs-track')).json()).toMatchObject({
      eventId: 'pk:ajs-track',
      eventName: 'Pricing Viewed',
      properties: { plan: 'pro' },
    });
    expect(elsewhere).toEqual([]);
  });
});

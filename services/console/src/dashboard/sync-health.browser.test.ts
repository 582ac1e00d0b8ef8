/**
 * The Sync health page in headless Chromium, against the product as it runs: the real console
 * and gateway (in process), processor (in process), a crm-sink as its own OS process (the
 * service's main.ts), Kafka, Redis and ClickHouse, and the fake HubSpot of the test kit over
 * real HTTP. An owner watches the page while events sync, then while the CRM starts refusing
 * them: the state and the failed count change, with the CRM's reason.
 */
import type { CrmMapping } from '@ingest/schemas';
import { type Component } from '@ingest/platform';
import { hashPassword } from '@ingest/domain';
import { type SinkProcess, SinkFleet, uniqueSuffix, waitFor } from '@ingest/testkit';
import { type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { createGatewayFixture, type GatewayFixture, launchChromium, signedInDashboardPage, screenshot } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWebBuilt } from '../../web/bundle.js';

const keyPrefix = `t${uniqueSuffix()}:`;
const token = `tok-health-${uniqueSuffix()}`;
const email = `health-${uniqueSuffix()}@example.com`;
const password = `health-${uniqueSuffix()}-password`;
let gw: GatewayFixture;
let crm: FakeCrm;
let sinks: SinkFleet | undefined;
let sink: SinkProcess | undefined;
let processor: Component[] = [];
let browser: Browser;
let page: Page;
let apiUrl: string;
let apiKey: string;

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-main' },
  rules: [{ id: 'signup', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'increment', field: 'signups' }] }],
};

beforeAll(async () => {
  await ensureWebBuilt();
  crm = await startFakeCrm({ tokens: [token] });
  gw = await createGatewayFixture({ REDIS_KEY_PREFIX: keyPrefix });
  const baseUrl = await gw.console.listen({ host: '127.0.0.1', port: 0 });
  apiUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  processor = await startProcessorFor(gw, 'health-processor');
  const created = await gw.newAccount('pro');
  apiKey = created.apiKey;
  await gw.controlPlane.putCrmCredential(created.account.id, 'hubspot-main', { type: 'hubspot', accessToken: token, baseUrl: crm.url });
  await gw.controlPlane.putMapping(created.account.id, mapping, 'admin');
  await gw.controlPlane.createOwner(created.account.id, email, await hashPassword(password));
  sinks = new SinkFleet({
    topicPrefix: gw.kafka.prefix,
    redisKeyPrefix: keyPrefix,
    groupId: `crm-sink-health-${uniqueSuffix()}`,
    label: 'health-sink',
    env: { CRM_COALESCE_WINDOW_MS: '100', CRM_RETRY_BASE_DELAY_MS: '50' },
  });
  sink = await sinks.start();

  browser = await launchChromium();
  page = await signedInDashboardPage(browser, baseUrl, { email, password });
});

afterAll(async () => {
  await browser?.close();
  await sinks?.killAll();
  for (const part of processor) await part.stop();
  const keys = await gw?.redis.keys(`${keyPrefix}*`);
  if (keys && keys.length > 0) await gw.redis.del(...keys);
  await gw?.close();
  await crm?.stop();
});

async function send(ids: string[]): Promise<void> {
  const res = await fetch(`${apiUrl}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events: ids.map((eventId) => ({ eventId, eventName: 'Signed Up', email: `${eventId}@health.io` })) }),
  });
  expect(res.status, await res.text()).toBe(202);
}

/** Refreshes the page until its figures show what is expected; says what it last saw. */
async function pageShows(expected: { state: string; synced?: string; failed?: string }): Promise<void> {
  let seen = {};
  await waitFor(
    async () => {
      await page.getByRole('button', { name: 'Refresh now' }).click();
      seen = {
        state: await page.getByTestId('sync-state').textContent(),
        synced: await page.getByTestId('synced-24h').textContent(),
        failed: await page.getByTestId('failed-24h').textContent(),
      };
      return Object.entries(expected).every(([k, v]) => (seen as Record<string, string>)[k] === v);
    },
    {
      description: `the Sync health page showing ${JSON.stringify(expected)}; it showed ${JSON.stringify(seen)} (sink log: ${sink?.logFile})`,
      timeoutMs: 60_000,
      intervalMs: 500,
    },
  );
}

describe('Sync health page', () => {
  it('shows nothing synced, then syncing normally with the counts and last success, then failing once the CRM refuses events', async () => {
    await page.getByRole('link', { name: 'Sync health' }).click();
    await page.getByRole('heading', { name: 'Sync health' }).waitFor();
    expect(await page.getByTestId('sync-state').textContent()).toBe('Nothing synced yet');
    expect(await page.getByTestId('last-success').textContent()).toBe('never');

    await send(['h-1', 'h-2', 'h-3']);
    await pageShows({ state: 'Syncing normally', synced: '3', failed: '0' });
    expect(await page.getByTestId('last-success').textContent()).toMatch(/UTC$/);
    expect(await page.getByRole('img', { name: /Events per hour over the last 7 days: 3 synced/ }).count()).toBe(1);
    await screenshot(page, 'sync-health-running');

    // The CRM starts refusing this account's writes (HubSpot's 400 VALIDATION_ERROR).
    crm.failNext({ status: 400, times: 1000, token });
    await send(['h-4', 'h-5']);
    await pageShows({ state: 'Sync is failing', synced: '3', failed: '2' });
    expect(await page.getByTestId('sync-reason').textContent()).toMatch(/^Why: events failed: .*400/);
    expect(await page.getByTestId('last-failure').textContent()).toMatch(/UTC$/);
    await screenshot(page, 'sync-health-failing');

    // And back: once the CRM takes writes again, the next events sync and the state says so.
    crm.clearFaults();
    await send(['h-6']);
    await pageShows({ state: 'Syncing normally', synced: '4', failed: '2' });
    expect(sinks?.unexpectedExits()).toEqual([]);
  });
});

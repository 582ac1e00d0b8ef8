/**
 * The CRM connections page in headless Chromium, against the real console (Kafka control plane,
 * Redis, ClickHouse), crm-sink's connection channel in-process on the same control plane, and
 * the fake HubSpot over HTTP: an owner adds a connection, tests it (success in words), rotates
 * it to a revoked token and tests again (the CRM's refusal in plain words), then removes it.
 */
import { hashPassword } from '@ingest/domain';
import { freePort, uniqueSuffix } from '@ingest/testkit';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import {
  createGatewayFixture,
  type GatewayFixture,
  launchChromium,
  signedInDashboardPage,
  screenshot,
  startConnectionChannel,
  TEST_CHANNEL_TOKEN,
} from '@ingest/testkit/gateway';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWebBuilt } from '../../web/bundle.js';

const GOOD = 'tok-browser-connection';
let gw: GatewayFixture;
let crm: FakeCrm;
let channel: { stop(): Promise<void> };
let browser: Browser;
let page: Page;
const email = `conn-${uniqueSuffix()}@example.com`;
const password = `conn-${uniqueSuffix()}-password`;

beforeAll(async () => {
  await ensureWebBuilt();
  crm = await startFakeCrm({ tokens: [GOOD] });
  const port = await freePort();
  gw = await createGatewayFixture({
    CRM_ALLOW_HTTP: 'true',
    CRM_ALLOWED_CIDRS: '127.0.0.1/32',
    CRM_SINK_INTERNAL_URL: `http://127.0.0.1:${port}`,
    CRM_SINK_INTERNAL_TOKEN: TEST_CHANNEL_TOKEN,
  });
  channel = await startConnectionChannel({
    port,
    controlPlane: gw.controlPlane,
    redis: gw.redis,
    redisKeyPrefix: `conn-browser-${port}:`,
    outboundPolicy: FAKE_CRM_OUTBOUND,
  });
  const baseUrl = await gw.console.listen({ host: '127.0.0.1', port: 0 });
  const { account } = await gw.newAccount('pro');
  await gw.controlPlane.createOwner(account.id, email, await hashPassword(password));
  browser = await launchChromium();
  page = await signedInDashboardPage(browser, baseUrl, { email, password });
});

afterAll(async () => {
  await browser?.close();
  await channel?.stop();
  await gw?.close();
  await crm?.stop();
});

describe('CRM connections page', () => {
  it('adds a HubSpot connection, tests it, sees a refused token in plain words, and removes it', async () => {
    await page.getByRole('link', { name: 'CRM connections' }).click();
    await page.getByRole('heading', { name: 'CRM connections' }).waitFor();
    await page.getByText('No connections yet.').waitFor();

    await page.getByLabel('Name').fill('hubspot-main');
    await page.getByLabel('API base URL (optional)').fill(crm.url);
    await page.getByLabel('Private app access token').fill(GOOD);
    await page.getByRole('button', { name: 'Add connection' }).click();
    const row = page.getByTestId('connection-hubspot-main');
    await row.waitFor();
    expect(await row.textContent()).not.toContain(GOOD);

    await page.getByRole('button', { name: 'Test connection hubspot-main' }).click();
    const result = page.getByTestId('test-result-hubspot-main');
    await result.getByText('HubSpot accepted the token (200).').waitFor();
    await screenshot(page, 'connections-tested');

    await page.getByRole('button', { name: 'Rotate the secret of hubspot-main' }).click();
    await page.getByLabel('New private app access token').fill('tok-revoked-by-owner');
    await page.getByRole('button', { name: 'Replace secret' }).click();
    await result.getByText('Secret replaced: test it again.').waitFor();
    await page.getByRole('button', { name: 'Test connection hubspot-main' }).click();
    await result.getByText(/HubSpot refused the token \(401\): expired or revoked/).waitFor();
    expect(await result.getAttribute('class')).toBe('error');
    await screenshot(page, 'connections-refused');

    await page.getByRole('button', { name: 'Remove connection hubspot-main' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove connection' }).click();
    await page.getByText('No connections yet.').waitFor();
    expect(crm.calls.filter((c) => c.path === '/account-info/v3/details').map((c) => c.status)).toEqual([200, 401]);
  });
});

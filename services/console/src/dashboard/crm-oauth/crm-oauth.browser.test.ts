/**
 * Connecting a CRM through OAuth in headless Chromium, as an owner does it: the real console
 * (Kafka control plane, Redis) and a fake HubSpot whose host also serves the fake authorization
 * server (consent is given at once, as a signed-in HubSpot user who clicks "Connect app" would).
 * The owner clicks Connect HubSpot on the CRM connections page, the browser goes to the
 * authorize URL and back to the callback, which says the CRM is connected; the connection is
 * then listed on the page, its tokens sealed (never in the page).
 */
import { hashPassword } from '@ingest/domain';
import { freePort, uniqueSuffix } from '@ingest/testkit';
import { type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import {
  createGatewayFixture,
  type GatewayFixture,
  launchChromium,
  markOAuthConnectionBroken,
  signedInDashboardPage,
  screenshot,
} from '@ingest/testkit/gateway';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWebBuilt } from '../../../web/bundle.js';

let gw: GatewayFixture;
let crm: FakeCrm;
let browser: Browser;
let page: Page;
let baseUrl: string;
let keyPrefix: string;
let accountId: string;
const email = `oauth-${uniqueSuffix()}@example.com`;
const password = `oauth-${uniqueSuffix()}-password`;

beforeAll(async () => {
  await ensureWebBuilt();
  crm = await startFakeCrm({ tokens: [], oauth: { accessTtlMs: 60_000 } });
  const auth = crm.oauth;
  if (!auth) throw new Error('the fake CRM was started without its OAuth server');
  // The redirect URI is a setting, so the console's port is chosen before it listens.
  const port = await freePort();
  keyPrefix = `oauth-browser-${port}:`;
  gw = await createGatewayFixture({
    REDIS_KEY_PREFIX: keyPrefix,
    CRM_ALLOW_HTTP: 'true',
    CRM_ALLOWED_CIDRS: '127.0.0.1/32',
    CRM_OAUTH_REDIRECT_URL: `http://127.0.0.1:${port}/dashboard/api/crm/oauth/callback`,
    CRM_OAUTH_HUBSPOT_CLIENT_ID: auth.clientId,
    CRM_OAUTH_HUBSPOT_CLIENT_SECRET: auth.clientSecret,
    CRM_OAUTH_HUBSPOT_AUTHORIZE_URL: `${crm.url}/oauth/authorize`,
    CRM_OAUTH_HUBSPOT_API_URL: crm.url,
  });
  baseUrl = await gw.console.listen({ host: '127.0.0.1', port });
  const { account } = await gw.newAccount('pro');
  accountId = account.id;
  await gw.controlPlane.createOwner(account.id, email, await hashPassword(password));
  browser = await launchChromium();
  page = await signedInDashboardPage(browser, baseUrl, { email, password });
});

afterAll(async () => {
  await browser?.close();
  await gw?.close();
  await crm?.stop();
});

describe('connecting a CRM through OAuth', () => {
  it('Connect HubSpot goes to the consent screen and back, and the connection is listed', async () => {
    await page.getByRole('link', { name: 'CRM connections' }).click();
    await page.getByRole('heading', { name: 'CRM connections' }).waitFor();
    await page.getByText('No connections yet.').waitFor();

    await page.getByRole('button', { name: 'Connect HubSpot' }).click();
    await page.getByRole('heading', { name: 'HubSpot is connected' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/api/crm/oauth/callback');
    await screenshot(page, 'crm-oauth-connected');
    const authorizeCalls = crm.oauth?.calls.filter((c) => c.path === '/oauth/authorize') ?? [];
    expect(authorizeCalls.length, 'authorize requests the fake saw').toBe(1);

    await page.getByRole('link', { name: 'Back to the dashboard' }).click();
    await page.getByRole('link', { name: 'CRM connections' }).click();
    const row = page.getByTestId('connection-hubspot');
    await row.waitFor();
    const issued = crm.oauth?.calls.filter((c) => c.path === '/oauth/v1/token') ?? [];
    expect(issued.length, 'token requests the fake saw (the code exchange)').toBe(1);
    // The tokens are sealed for crm-sink: nothing of them reaches the page.
    expect(await page.content()).not.toMatch(/access_token|refresh_token/);
  });

  it('a connection crm-sink marked broken says so with the reason, and Connect again makes it renew itself again', async () => {
    const stored = gw.controlPlane.crmCredential(accountId, 'hubspot');
    const connectionId = (stored?.credential as { auth: { connectionId: string } }).auth.connectionId;
    await markOAuthConnectionBroken(gw.redis, { keyPrefix, accountId, name: 'hubspot', connectionId, reason: 'invalid_grant: revoked' });

    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('link', { name: 'CRM connections' }).click();
    const notice = page.getByTestId('connection-broken-hubspot');
    await notice.waitFor();
    expect(await notice.textContent()).toContain('invalid_grant: revoked');
    await screenshot(page, 'crm-oauth-broken');

    await page.getByRole('button', { name: 'Connect hubspot again' }).click();
    await page.getByRole('heading', { name: 'HubSpot is connected' }).waitFor();
    await page.getByRole('link', { name: 'Back to the dashboard' }).click();
    await page.getByRole('link', { name: 'CRM connections' }).click();
    const row = page.getByTestId('connection-hubspot');
    await row.getByText('renews itself').waitFor();
    expect(await page.getByTestId('connection-broken-hubspot').count(), 'broken notices after connecting again').toBe(0);
    const renewed = gw.controlPlane.crmCredential(accountId, 'hubspot');
    expect((renewed?.credential as { auth: { connectionId: string } }).auth.connectionId, 'a new connection id').not.toBe(connectionId);
  });

  it('a consent the owner refuses shows a plain page and stores nothing', async () => {
    crm.oauth?.denyNext();
    await page.getByRole('link', { name: 'CRM connections' }).click();
    await page.getByRole('button', { name: 'Connect HubSpot' }).click();
    await page.getByRole('heading', { name: 'The CRM was not connected' }).waitFor();
    const text = (await page.textContent('body')) ?? '';
    expect(text).toContain('access_denied');
    const issued = crm.oauth?.calls.filter((c) => c.path === '/oauth/v1/token') ?? [];
    expect(issued.length, 'token requests the fake saw: none more than the two connections made').toBe(2);
  });
});

/**
 * Real servers: Kafka, Redis, ClickHouse; the real gateway app listening on a loopback port;
 * headless Chromium. An owner signs in, creates an API key in the UI, uses it with
 * POST /v1/events, revokes it in the UI and gets 401; sees the usage page.
 */
import { hashPassword } from '@ingest/shared';
import { uniqueSuffix, waitFor } from '@ingest/shared/testing';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWebBuilt } from '../../../../scripts/web-build.js';
import { launchChromium, screenshot } from '../test-support/browser.js';
import { createGatewayFixture, type GatewayFixture } from '../test-support/gateway.fixture.js';

let gw: GatewayFixture;
let browser: Browser;
let page: Page;
let baseUrl: string;
const email = `owner-${uniqueSuffix()}@example.com`;
const password = `browser-${uniqueSuffix()}-password`;

beforeAll(async () => {
  await ensureWebBuilt();
  gw = await createGatewayFixture();
  baseUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const { account } = await gw.newAccount('free');
  await gw.controlPlane.createOwner(account.id, email, await hashPassword(password));
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
});

afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

const sendEvent = (apiKey: string) =>
  fetch(`${baseUrl}/v1/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ events: [{ eventName: 'Browser Test', email: 'ada@example.com' }] }),
  });

describe('dashboard in a browser', () => {
  it('signs in (a wrong password first), with a Secure HttpOnly cookie on http://127.0.0.1', async () => {
    await page.goto(`${baseUrl}/dashboard/`);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill('wrong-password-123');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Email or password is wrong');
    await screenshot(page, 'sign-in');

    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    const cookie = (await page.context().cookies()).find((c) => c.name === 'ingest_dashboard');
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/dashboard' });
  });

  it('creates a key shown once, which POST /v1/events accepts; revoked in the UI it is refused with 401', async () => {
    await page.getByLabel('New key name').fill('browser key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const apiKey = (await page.getByTestId('new-key').textContent()) ?? '';
    expect(apiKey).toMatch(/^svc_live_[0-9A-Za-z]{43}$/);
    await page.getByRole('cell', { name: 'browser key', exact: true }).waitFor();
    await screenshot(page, 'keys-created');

    expect((await sendEvent(apiKey)).status).toBe(202);
    // "last used" appears after a reload of the list.
    await page.reload();
    await expect.poll(async () => page.getByRole('row', { name: /browser key/ }).textContent()).not.toContain('never');

    await page.getByRole('button', { name: 'Revoke key browser key' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await screenshot(page, 'keys-revoke-dialog');
    await dialog.getByRole('button', { name: 'Revoke key' }).click();
    await page
      .getByRole('row', { name: /browser key/ })
      .getByText('revoked')
      .waitFor();
    await waitFor(async () => (await sendEvent(apiKey)).status === 401 || undefined, { description: 'the revoked key refused', timeoutMs: 5_000 });
    await screenshot(page, 'keys-revoked');
  });

  it('shows usage: plan, used, limit and the 90-day chart', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    expect(page.url()).toBe(`${baseUrl}/dashboard/usage`);
    await expect.poll(() => page.getByTestId('used').textContent()).toBe('1');
    expect(await page.locator('.figures').textContent()).toContain('free');
    expect(await page.getByRole('meter').getAttribute('aria-valuenow')).toBe('0');
    expect(await page.locator('svg rect.bar').count()).toBe(90);
    await screenshot(page, 'usage');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'usage-phone');
    await page.setViewportSize({ width: 1200, height: 800 });
  });

  it('signs out and is back at the sign-in form; a reload stays signed out', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to your dashboard' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in to your dashboard' }).waitFor();
    expect((await page.context().cookies()).find((c) => c.name === 'ingest_dashboard')).toBeUndefined();
  });
});

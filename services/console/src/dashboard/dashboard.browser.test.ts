/**
 * Real servers: Kafka, Redis, ClickHouse; the real gateway app listening on a loopback port and
 * the real processor (job runner, dedupe, storage) in process; headless Chromium. An owner signs
 * in, creates an API key in the UI, uses it with POST /v1/events, revokes it in the UI and gets
 * 401; sees the usage page with the stored event in its chart; uploads a CSV (a wrong header
 * first) and watches the job complete.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { uniqueSuffix, waitFor } from '@ingest/testkit';
import type { Browser, Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type GatewayFixture, screenshot } from '@ingest/testkit/gateway';
import { usePipelineDashboard } from './pipeline-dashboard.fixture.js';

const email = `owner-${uniqueSuffix()}@example.com`;
const password = `browser-${uniqueSuffix()}-password`;
const dash = usePipelineDashboard({ processorName: 'browser-processor', owner: { email, password } });
let gw: GatewayFixture;
let browser: Browser;
let page: Page;
let baseUrl: string;
/** The gateway's public API, where the keys the dashboard makes are used. */
let apiUrl: string;
let accountId: string;

beforeAll(async () => {
  ({ gw, browser, baseUrl, apiUrl, accountId } = dash);
  page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
});

const sendEvent = (apiKey: string) =>
  fetch(`${apiUrl}/v1/events`, {
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
    // Keyboard only: Enter in the password field submits the form.
    await page.getByLabel('Password').press('Enter');
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
    // New keys default to sending events and reading usage.
    expect(
      await page
        .getByRole('row', { name: /browser key/ })
        .getByTestId('key-access')
        .textContent(),
    ).toBe('events:write, usage:read');
    await screenshot(page, 'keys-created');

    expect((await sendEvent(apiKey)).status).toBe(202);
    // "last used" appears after a reload of the list.
    await page.reload();
    await expect.poll(async () => page.getByRole('row', { name: /browser key/ }).textContent()).not.toContain('never');

    // Escape closes the confirmation without revoking; the dialog then opens again for real.
    await page.getByRole('button', { name: 'Revoke key browser key' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await sendEvent(apiKey)).status).toBe(202);
    await page.getByRole('button', { name: 'Revoke key browser key' }).click();
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

  it('chooses scopes and the key type: a key with events:read reads events back, a publishable key only sends', async () => {
    const read = (apiKey: string) => fetch(`${apiUrl}/v1/events/evt-not-there`, { headers: { authorization: `Bearer ${apiKey}` } });
    await page.getByLabel('New key name').fill('reader key');
    await page.getByLabel(/Read events back/).check();
    // The notice still shows the previous test's key until the new one arrives.
    const shownKey = async () => ((await page.getByTestId('new-key').count()) > 0 ? ((await page.getByTestId('new-key').textContent()) ?? '') : '');
    const newKey = async (previous: string) => {
      await expect.poll(shownKey).not.toBe(previous);
      return shownKey();
    };
    const shown = await shownKey();
    await page.getByRole('button', { name: 'Create key' }).click();
    const reader = await newKey(shown);
    await page.getByRole('cell', { name: 'reader key', exact: true }).waitFor();
    expect(
      await page
        .getByRole('row', { name: /reader key/ })
        .getByTestId('key-access')
        .textContent(),
    ).toBe('events:write, events:read, usage:read');
    expect((await read(reader)).status).toBe(404);

    await page.getByLabel('New key name').fill('web key');
    await page.getByLabel(/Publishable/).check();
    // A publishable key's scopes are fixed: the checkboxes are disabled.
    expect(await page.getByLabel(/Read usage/).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Create key' }).click();
    const publishable = await newKey(reader);
    expect(publishable).toMatch(/^svc_pub_[0-9A-Za-z]{43}$/);
    await page.getByRole('cell', { name: 'web key', exact: true }).waitFor();
    expect(
      await page
        .getByRole('row', { name: /web key/ })
        .getByTestId('key-access')
        .textContent(),
    ).toBe('publishable: events:write');
    await screenshot(page, 'keys-scopes');
    // Allowed to send (an invalid event, so the usage the next tests count stays as it is): 400, not 403.
    const invalid = await fetch(`${apiUrl}/v1/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${publishable}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events: [{ eventName: 'No Identity' }] }),
    });
    expect(invalid.status).toBe(400);
    const refused = await read(publishable);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'missing_scope', scope: 'events:read' });
  });

  it('shows usage: plan, used, limit and the 90-day chart with the stored event', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    expect(page.url()).toBe(`${baseUrl}/dashboard/usage`);
    expect(await page.getByTestId('used').textContent()).toBe('2');
    // The chart reads ClickHouse: reload until the processor has stored the event.
    await waitFor(
      async () => {
        await page.reload();
        await page.getByRole('heading', { name: 'Usage' }).waitFor();
        return (await page.getByRole('img', { name: /Daily unique events, 2 in the last 90 days/ }).count()) === 1 || undefined;
      },
      { description: 'the event in the daily chart', timeoutMs: 60_000, intervalMs: 1_000 },
    );
    expect(await page.locator('svg rect.bar').count()).toBe(90);
    expect(await page.locator('.figures').textContent()).toContain('free');
    expect(await page.getByRole('meter').getAttribute('aria-valuenow')).toBe('0');
    await screenshot(page, 'usage');
    await page.setViewportSize({ width: 390, height: 844 });
    await screenshot(page, 'usage-phone');
    await page.setViewportSize({ width: 1200, height: 800 });
  });

  it('previews a CSV, refuses a wrong header in the browser, and shows the job running to completion', async () => {
    await page.getByRole('link', { name: 'Jobs' }).click();
    await page.getByRole('heading', { name: 'Jobs', exact: true }).waitFor();
    const dir = tmpdir();
    const bad = join(dir, `bad-${uniqueSuffix()}.csv`);
    writeFileSync(bad, 'event_name,email\nSigned Up,ada@example.com\n');
    await page.getByLabel('CSV file').setInputFiles(bad);
    await expect.poll(() => page.getByRole('alert', { name: 'Problems in the file' }).textContent()).toContain('no timestamp column');
    expect(await page.getByRole('button', { name: 'Start job' }).isDisabled()).toBe(true);
    await screenshot(page, 'jobs-bad-header');

    // A gzip-compressed file is previewed from its inflated first rows (issue 27, item 2).
    const zipped = join(dir, `zipped-${uniqueSuffix()}.csv.gz`);
    writeFileSync(zipped, gzipSync('event_name,timestamp,email\nSigned Up,2026-01-05T10:00:00Z,zip@example.com\n'));
    await page.getByLabel('CSV file').setInputFiles(zipped);
    await page.getByRole('table', { name: /First rows of zipped-/ }).waitFor();
    expect(await page.getByRole('cell', { name: 'zip@example.com' }).count()).toBe(1);

    const good = join(dir, `good-${uniqueSuffix()}.csv`);
    writeFileSync(
      good,
      [
        'event_name,timestamp,email,domain,plan',
        'Signed Up,2026-01-05T10:00:00Z,ada@example.com,,pro',
        '"Invited, Teammate",2026-01-05T11:00:00Z,grace@example.com,,free',
        'Broken Row,2026-01-05T12:00:00Z,,,',
      ].join('\r\n'),
    );
    await page.getByLabel('CSV file').setInputFiles(good);
    await page.getByRole('table', { name: /First rows of good-/ }).waitFor();
    expect(await page.getByRole('cell', { name: 'Invited, Teammate' }).count()).toBe(1);
    await screenshot(page, 'jobs-preview');
    await page.getByRole('button', { name: 'Start job' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/queued with 3 rows/);

    const job = page.getByTestId('job').first();
    await expect.poll(() => job.getAttribute('data-status'), { timeout: 60_000 }).toBe('completed');
    expect(await job.textContent()).toContain('3 of 3 processed · 2 accepted · 1 rejected');
    await job.getByText('1 error').click();
    expect(await job.getByRole('cell', { name: '4', exact: true }).count()).toBe(1);
    await screenshot(page, 'jobs-completed');
  });

  it('warns at 80 % of the allowance and says when it is used up', async () => {
    const { plaintext } = await gw.controlPlane.createApiKey(accountId, 'bulk sender');
    const batch = (n: number) =>
      fetch(`${apiUrl}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${plaintext}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events: Array.from({ length: n }, (_, i) => ({ eventName: 'Load', email: `u${uniqueSuffix()}-${i}@example.com` })) }),
      });
    const usedNow = async () =>
      ((await (await fetch(`${apiUrl}/v1/usage`, { headers: { authorization: `Bearer ${plaintext}` } })).json()) as { used: number }).used;
    // Up to 85 % of the free plan's 1,000 events, whatever the earlier tests used.
    let toSend = 850 - (await usedNow());
    while (toSend > 0) {
      expect((await batch(Math.min(100, toSend))).status).toBe(202);
      toSend -= 100;
    }
    await page.getByRole('link', { name: 'Usage' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('You have used 85% of this month');
    await screenshot(page, 'usage-warning');

    while ((await usedNow()) < 1000) expect((await batch(100)).status).toBe(202);
    await page.reload();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain("You have used this month's allowance");
    expect(await page.getByRole('meter').getAttribute('aria-valuenow')).toBe('100');
    await screenshot(page, 'usage-exhausted');
  });

  it('signs out and is back at the sign-in form; a reload stays signed out', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to your dashboard' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Sign in to your dashboard' }).waitFor();
    expect((await page.context().cookies()).find((c) => c.name === 'ingest_dashboard')).toBeUndefined();
  });
});

/**
 * The CRM connections page in headless Chromium, against the real console (Kafka control plane,
 * Redis, ClickHouse), crm-sink's connection channel in-process on the same control plane, and
 * the fake HubSpot over HTTP: an owner adds a connection, tests it (success in words), rotates
 * it to a revoked token and tests again (the CRM's refusal in plain words), then removes it.
 */
import { screenshot } from '@ingest/testkit/gateway';
import { describe, expect, it } from 'vitest';
import { useCrmConnectionPage } from './crm-connection-page.fixture.js';

const GOOD = 'tok-browser-connection';
const ui = useCrmConnectionPage({ label: 'conn', token: GOOD });

describe('CRM connections page', () => {
  it('adds a HubSpot connection, tests it, sees a refused token in plain words, and removes it', async () => {
    const { page, crm } = ui;
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

/**
 * The CRM mapping page's rules form in headless Chromium, against the real console (Kafka
 * control plane, Redis, ClickHouse), crm-sink's connection channel in-process on the same
 * control plane, and the fake HubSpot over HTTP: an owner builds a rule through the form and sees
 * the JSON follow (and the form follow the JSON), picks fields from the CRM's real properties,
 * and sees a save refused for a field HubSpot does not have, named with its rule.
 */
import { screenshot } from '@ingest/testkit/gateway';
import { describe, expect, it } from 'vitest';
import { useCrmConnectionPage } from './crm-connection-page.fixture.js';

const TOKEN = 'tok-browser-mapping-form';
const ui = useCrmConnectionPage({
  label: 'form',
  token: TOKEN,
  viewport: { width: 1280, height: 1000 },
  // The name the page's starting document uses.
  prepare: ({ gw, crm, accountId }) => gw.controlPlane.putCrmCredential(accountId, 'hubspot-prod', { type: 'hubspot', accessToken: TOKEN, baseUrl: crm.url }),
});

const json = () => ui.page.getByLabel('Mapping document (JSON)');

describe('CRM mapping rules form', () => {
  it('builds a rule through the form, the JSON follows, and the JSON edits show in the form', async () => {
    const { page } = ui;
    await page.getByRole('link', { name: 'CRM mapping' }).click();
    await page.getByRole('heading', { name: 'CRM mapping' }).waitFor();
    expect(await page.getByLabel('Rule 1 event name').inputValue()).toBe('Signed Up');

    // HubSpot's own contact and company properties are offered (read-only ones are not).
    await page.locator('#crm-fields-contact option').first().waitFor({ state: 'attached' });
    const offered = await page.locator('#crm-fields-contact option').evaluateAll((options) => options.map((o) => o.getAttribute('value')));
    expect(offered).toEqual(['email', 'firstname', 'lifecyclestage', 'plan', 'signup_count']);

    await page.getByRole('button', { name: 'Add rule' }).click();
    await page.getByLabel('Rule 2 id').fill('upgraded');
    await page.getByLabel('Rule 2 event name').fill('Upgraded');
    await page.getByLabel('Rule 2 object').selectOption('company');
    await page.getByLabel('Rule 2 field 1 name').fill('name');
    await page.getByLabel('Rule 2 field 1 value').fill('company_name');
    const doc = JSON.parse(await json().inputValue()) as { rules: unknown[] };
    expect(doc.rules[1]).toEqual({
      id: 'upgraded',
      when: { eventName: 'Upgraded' },
      object: 'company',
      actions: [{ op: 'set', field: 'name', from: { property: 'company_name' } }],
    });

    // And the other way: an edit in the JSON view shows in the form.
    await json().fill((await json().inputValue()).replace('"Upgraded"', '"Plan Upgraded"'));
    expect(await page.getByLabel('Rule 2 event name').inputValue()).toBe('Plan Upgraded');
    await screenshot(page, 'mapping-form');
  });

  it('refuses a save for a field HubSpot does not have, naming rule and field; saves once the form picks real fields', async () => {
    const { page, gw, accountId } = ui;
    // The starting document's fields (first_source, signups) are not HubSpot properties of this portal.
    await page.getByRole('button', { name: 'Save version 1' }).click();
    const errors = page.getByRole('list', { name: 'Validation errors' });
    await errors.waitFor();
    const text = await errors.textContent();
    expect(text).toContain('/rules/0/actions/0/field');
    expect(text).toContain('rule "signed-up": contact field "first_source" does not exist in hubspot');
    expect(text).toContain('contact field "signups" does not exist in hubspot');
    expect(gw.controlPlane.currentMapping(accountId)).toBeUndefined();
    await screenshot(page, 'mapping-unknown-field');

    await page.getByLabel('Rule 1 field 1 name').fill('plan');
    await page.getByLabel('Rule 1 field 2 name').fill('signup_count');
    await page.getByRole('button', { name: 'Save version 1' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved as version 1.' }).waitFor();
    expect(gw.controlPlane.currentMapping(accountId)?.mapping.rules.map((r) => r.actions.map((a) => a.field))).toEqual([['plan', 'signup_count'], ['name']]);
  });
});

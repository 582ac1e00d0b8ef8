// Servers: the fake CRM only (fastify on 127.0.0.1), over real HTTP.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { createHubSpotAdapter } from './hubspot.adapter.js';
import { createSalesforceAdapter } from './salesforce.adapter.js';

const TOKEN = 'links-adapter-token';
let crm: FakeCrm;
let hubspot: ReturnType<typeof createHubSpotAdapter>;
let salesforce: ReturnType<typeof createSalesforceAdapter>;

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [TOKEN] });
  hubspot = createHubSpotAdapter({ type: 'hubspot', accessToken: TOKEN, baseUrl: crm.url }, { outboundPolicy: FAKE_CRM_OUTBOUND });
  salesforce = createSalesforceAdapter({ type: 'salesforce', accessToken: TOKEN, instanceUrl: crm.url }, { outboundPolicy: FAKE_CRM_OUTBOUND });
});
afterAll(async () => {
  await Promise.all([hubspot.close(), salesforce.close()]);
  await crm.stop();
});
beforeEach(() => crm.reset());

const links = [
  { email: 'ada@acme.io', domain: 'acme.io' },
  { email: 'bo@nowhere.io', domain: 'nowhere.io' },
  // No such contact: nothing to link, not waiting either.
  { email: 'ghost@acme.io', domain: 'acme.io' },
];

describe('linking contacts to companies', () => {
  it('HubSpot: associates the pairs that both exist, creates nothing, and reports those whose company is missing', async () => {
    await hubspot.upsert('contact', [
      { object: 'contact', key: 'ada@acme.io', properties: {} },
      { object: 'contact', key: 'bo@nowhere.io', properties: {} },
    ]);
    await hubspot.upsert('company', [{ object: 'company', key: 'acme.io', properties: {} }]);
    const result = await hubspot.link?.(links);
    expect(result).toEqual({ failures: [], missing: [links[1]] });
    expect(crm.records('hubspot', 'companies').has('nowhere.io')).toBe(false);
    const company = crm.records('hubspot', 'companies').get('acme.io');
    expect(crm.records('hubspot', 'contacts').get('ada@acme.io')?.associations).toEqual([company?.id]);
    expect(crm.records('hubspot', 'contacts').get('bo@nowhere.io')?.associations).toEqual([]);
    // Again: the same one association.
    expect(await hubspot.link?.(links)).toEqual(result);
    expect(crm.records('hubspot', 'contacts').get('ada@acme.io')?.associations).toEqual([company?.id]);
  });

  it('Salesforce: sets AccountId of the Contacts whose Account exists, creates nothing, and reports those whose company is missing', async () => {
    await salesforce.upsert('contact', [
      { object: 'contact', key: 'ada@acme.io', properties: { LastName: 'Lovelace' } },
      { object: 'contact', key: 'bo@nowhere.io', properties: { LastName: 'Bo' } },
    ]);
    await salesforce.upsert('company', [{ object: 'company', key: 'acme.io', properties: { Name: 'Acme' } }]);
    const result = await salesforce.link?.(links);
    expect(result).toEqual({ failures: [], missing: [links[1]] });
    expect(crm.records('salesforce', 'Account').has('nowhere.io')).toBe(false);
    const account = crm.records('salesforce', 'Account').get('acme.io');
    expect(crm.records('salesforce', 'Contact').get('ada@acme.io')?.properties).toMatchObject({ AccountId: account?.id, LastName: 'Lovelace' });
    expect(crm.records('salesforce', 'Contact').get('bo@nowhere.io')?.properties.AccountId).toBeUndefined();
  });

  it('Salesforce (fake): an AccountId naming no Account is refused per record, as Salesforce does', async () => {
    await salesforce.upsert('contact', [{ object: 'contact', key: 'ada@acme.io', properties: { LastName: 'Lovelace' } }]);
    const result = await salesforce.upsert('contact', [{ object: 'contact', key: 'ada@acme.io', properties: { AccountId: '001NOPE' } }]);
    expect(result.failures).toEqual([{ key: 'ada@acme.io', message: expect.stringContaining('INVALID_CROSS_REFERENCE_KEY') as string }]);
  });
});

import type { CrmMapping } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { mappingLinksContacts, newestLinks, plannedLink } from './crm-links.js';
import { buildHubSpotLinkRequests } from './hubspot.requests.js';
import { buildSalesforceLinkRequests, buildSalesforceLinkUpdateRequests, salesforceTarget } from './salesforce.requests.js';

const rule = (id: string, object: 'contact' | 'company') => ({
  id,
  when: { eventName: 'Upgraded' },
  object,
  actions: [{ op: 'set' as const, field: 'plan', from: { property: 'plan' } }],
});
const both: CrmMapping = { version: 1, crm: { type: 'hubspot', credentialsRef: 'c' }, rules: [rule('p', 'contact'), rule('c', 'company')] };

describe('contact-company links', () => {
  it('are planned for an event naming both, when the mapping writes both kinds of record and does not turn links off', () => {
    const event = { email: 'ada@acme.io', domain: 'acme.io' };
    expect(plannedLink(both, event, 1)).toEqual({ email: 'ada@acme.io', domain: 'acme.io' });
    expect(plannedLink(both, event, 0)).toBeUndefined();
    expect(plannedLink(both, { ...event, domain: null }, 1)).toBeUndefined();
    expect(plannedLink(both, { ...event, email: null }, 1)).toBeUndefined();
    expect(mappingLinksContacts({ ...both, rules: [rule('p', 'contact')] })).toBe(false);
    expect(mappingLinksContacts({ ...both, links: { contactCompany: false } })).toBe(false);
    expect(mappingLinksContacts({ ...both, links: {} })).toBe(true);
  });

  it('keep one link per contact: the newest event’s, by event time then eventId', () => {
    const link = (email: string, domain: string, timestampMs: number, eventId: string) => ({ link: { email, domain }, timestampMs, eventId });
    expect(
      newestLinks([
        link('ada@a.io', 'old.io', 2, 'e2'),
        link('ADA@a.io', 'new.io', 3, 'e1'),
        link('bo@b.io', 'b.io', 1, 'e9'),
        link('ada@a.io', 'older.io', 1, 'e9'),
      ]),
    ).toEqual([
      { email: 'ADA@a.io', domain: 'new.io' },
      { email: 'bo@b.io', domain: 'b.io' },
    ]);
    expect(newestLinks([link('a@a.io', 'x.io', 5, 'e1'), link('a@a.io', 'y.io', 5, 'e2')])).toEqual([{ email: 'a@a.io', domain: 'y.io' }]);
  });

  it('are built as ids read first, then the association (HubSpot) or Contact.AccountId (Salesforce)', () => {
    const links = [{ email: 'ada@acme.io', domain: 'acme.io' }];
    expect(buildHubSpotLinkRequests(links).map((r) => r.path)).toEqual([
      '/crm/v3/objects/contacts/batch/read',
      '/crm/v3/objects/companies/batch/read',
      '/crm/v4/associations/contacts/companies/batch/associate/default',
    ]);
    const target = salesforceTarget({ type: 'salesforce', accessToken: 't', instanceUrl: 'https://x.my.salesforce.com' });
    expect(buildSalesforceLinkRequests(target, links).map((r) => r.method)).toEqual(['GET', 'GET', 'PATCH']);
    expect(buildSalesforceLinkUpdateRequests(target, links, new Map([['acme.io', '001A']]))[0]?.body).toEqual({
      allOrNone: false,
      records: [{ attributes: { type: 'Contact' }, Ingest_Email__c: 'ada@acme.io', AccountId: '001A' }],
    });
  });
});

/**
 * Real servers: Kafka and Redis; the CRMs are the fake HubSpot and Salesforce of the test kit
 * (@ingest/testkit/fake-crm) over real HTTP, called by the real adapters. Events are produced to
 * events.unique directly.
 *
 * Issue 25 item 4: a contact is linked to the company of its event's domain (HubSpot default
 * association, Salesforce Contact.AccountId), idempotently, also when the company arrives after
 * the contact, and not at all when the mapping turns links off.
 */
import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { type CrmCredential, createRecordStateReader, planSync, plannedLink, previewSync, requestPlanner, syncStateKey } from '@ingest/domain';
import { uniqueSuffix } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_CRM_OUTBOUND, type FakeCall, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { createAdapter } from './adapters/index.js';
import { createStaticMappings } from './adapters/memory-crm.fixture.js';
import { createSinkFixture, type SinkFixture } from './crm-sink.fixture.js';

const HUBSPOT = 'acc_links_hs';
const SALESFORCE = 'acc_links_sf';
const OFF = 'acc_links_off';
const token = (accountId: string) => `tok-${accountId}`;
const ASSOCIATE = '/crm/v4/associations/contacts/companies/batch/associate/default';

let fx: SinkFixture;
let crm: FakeCrm;

/** Contacts on every event, companies on upgrades only: a company can come after its contact. */
function mapping(type: 'hubspot' | 'salesforce', links?: CrmMapping['links']): CrmMapping {
  return {
    version: 1,
    crm: { type, credentialsRef: 'crm' },
    rules: [
      {
        id: 'person',
        when: { eventName: ['Logged In', 'Upgraded'] },
        object: 'contact',
        actions: [
          { op: 'set', field: 'LastName', from: { property: 'name' } },
          { op: 'max', field: 'Last_Seen__c', from: { event: 'timestamp' } },
        ],
      },
      { id: 'company', when: { eventName: 'Upgraded' }, object: 'company', actions: [{ op: 'set', field: 'Name', from: { event: 'domain' } }] },
    ],
    ...(links ? { links } : {}),
  };
}

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [HUBSPOT, SALESFORCE, OFF].map(token) });
  const credential = (accountId: string, type: 'hubspot' | 'salesforce'): CrmCredential =>
    type === 'hubspot' ? { type, accessToken: token(accountId), baseUrl: crm.url } : { type, accessToken: token(accountId), instanceUrl: crm.url };
  fx = await createSinkFixture({
    mappings: createStaticMappings({
      [HUBSPOT]: { mapping: mapping('hubspot'), credential: credential(HUBSPOT, 'hubspot') },
      [SALESFORCE]: { mapping: mapping('salesforce'), credential: credential(SALESFORCE, 'salesforce') },
      [OFF]: { mapping: mapping('hubspot', { contactCompany: false }), credential: credential(OFF, 'hubspot') },
    }),
    createAdapter: (c) => createAdapter(c, { outboundPolicy: FAKE_CRM_OUTBOUND }),
  });
  await fx.startSink(`crm-sink-${uniqueSuffix()}`, {
    coalesce: { windowMs: 300, maxRecords: 100 },
    retry: { maxAttempts: 4, budgetMs: 30_000, baseDelayMs: 50, maxDelayMs: 200 },
  });
});

afterAll(async () => {
  await fx?.cleanup();
  await crm?.stop();
});

const event = (accountId: string, eventName: string, email: string, domain: string, minute: number, name = 'Lovelace') =>
  fx.event(accountId, eventName, email, { name }, minute, domain);

async function synced(records: EventRecord[]): Promise<void> {
  await fx.produce(records);
  await fx.settled(records);
  expect((await fx.states(records)).map((s) => s.state)).toEqual(records.map(() => 'synced'));
}

const hubspotCalls = (accountId: string, path: string): FakeCall[] => crm.calls.filter((c) => c.token === token(accountId) && c.path === path);
const associated = (calls: FakeCall[]) => calls.flatMap((c) => (c.body as { inputs: { from: { id: string }; to: { id: string } }[] }).inputs);

describe('contacts linked to companies', () => {
  it('HubSpot: several events of one contact in a flush make one association with the company written beside it', async () => {
    const suffix = uniqueSuffix().toLowerCase();
    const email = `ada@${suffix}.io`;
    const domain = `${suffix}.io`;
    await synced([event(HUBSPOT, 'Logged In', email, domain, 0), event(HUBSPOT, 'Upgraded', email, domain, 1), event(HUBSPOT, 'Logged In', email, domain, 2)]);

    const contact = crm.records('hubspot', 'contacts').get(email);
    const company = crm.records('hubspot', 'companies').get(domain);
    expect(contact?.associations).toEqual([company?.id]);
    expect(company?.associations).toEqual([contact?.id]);
    // One pair per contact per call, never the same contact twice in a batch.
    for (const call of hubspotCalls(HUBSPOT, ASSOCIATE)) {
      const froms = associated([call]).map((i) => i.from.id);
      expect(new Set(froms).size, JSON.stringify(call.body)).toBe(froms.length);
    }
    expect(associated(hubspotCalls(HUBSPOT, ASSOCIATE)).filter((i) => i.from.id === contact?.id)).toEqual([
      { from: { id: contact?.id }, to: { id: company?.id } },
    ]);
  });

  it('HubSpot: a company that arrives after its contact is linked once it exists; a retried association changes nothing', async () => {
    const suffix = uniqueSuffix().toLowerCase();
    const email = `bob@${suffix}.io`;
    const domain = `${suffix}.io`;
    const before = hubspotCalls(HUBSPOT, ASSOCIATE).length;
    await synced([event(HUBSPOT, 'Logged In', email, domain, 0)]);
    expect(crm.records('hubspot', 'contacts').get(email)?.associations).toEqual([]);
    expect(crm.records('hubspot', 'companies').has(domain)).toBe(false);
    // Nothing to link yet: the ids were looked up, no association was asked for.
    expect(hubspotCalls(HUBSPOT, ASSOCIATE).length).toBe(before);

    // The association answers 503 once: the link call is retried whole (ids read again), and links once.
    crm.failNext({ token: token(HUBSPOT), path: ASSOCIATE, status: 503 });
    await synced([event(HUBSPOT, 'Upgraded', email, domain, 1)]);
    expect(
      hubspotCalls(HUBSPOT, ASSOCIATE)
        .slice(before)
        .map((c) => c.status),
    ).toEqual([503, 200]);
    const contact = crm.records('hubspot', 'contacts').get(email);
    const company = crm.records('hubspot', 'companies').get(domain);
    expect(company).toBeDefined();
    expect(contact?.associations).toEqual([company?.id]);

    // Redelivered (a replay): linked again, still one association.
    const replay = event(HUBSPOT, 'Logged In', email, domain, 2);
    await synced([replay]);
    const linked = hubspotCalls(HUBSPOT, ASSOCIATE).length;
    await fx.redis.del(syncStateKey(fx.redisKeyPrefix, HUBSPOT, replay.eventId));
    await synced([replay]);
    expect(hubspotCalls(HUBSPOT, ASSOCIATE).length).toBe(linked + 1);
    expect(crm.records('hubspot', 'contacts').get(email)?.associations).toEqual([company?.id]);
    expect(crm.records('hubspot', 'companies').get(domain)?.associations).toEqual([contact?.id]);
  });

  it('Salesforce: Contact.AccountId is set once the Account exists, and setting it again changes nothing', async () => {
    const suffix = uniqueSuffix().toLowerCase();
    const email = `cy@${suffix}.io`;
    const domain = `${suffix}.io`;
    const contacts = crm.records('salesforce', 'Contact');
    await synced([event(SALESFORCE, 'Logged In', email, domain, 0)]);
    expect(contacts.get(email)?.properties.AccountId).toBeUndefined();

    await synced([event(SALESFORCE, 'Upgraded', email, domain, 1)]);
    const account = crm.records('salesforce', 'Account').get(domain);
    expect(account).toBeDefined();
    expect(contacts.get(email)?.properties).toMatchObject({ AccountId: account?.id, LastName: 'Lovelace' });
    expect(contacts.get(email)?.associations).toEqual([account?.id]);

    await synced([event(SALESFORCE, 'Logged In', email, domain, 2, 'Byron')]);
    expect(contacts.get(email)?.properties).toMatchObject({ AccountId: account?.id, LastName: 'Byron' });
    const linkWrites = crm.calls.filter(
      (c) => c.token === token(SALESFORCE) && c.method === 'PATCH' && JSON.stringify(c.body).includes('"AccountId"') && c.status === 200,
    );
    expect(linkWrites.length).toBe(2);
  });

  it('a company written later by an event that names no person links the contacts that waited for it (HubSpot and Salesforce)', async () => {
    const suffix = uniqueSuffix().toLowerCase();
    const domain = `${suffix}.io`;
    const [ann, ben] = [`ann@${domain}`, `ben@${domain}`];
    await synced([event(HUBSPOT, 'Logged In', ann, domain, 0), event(HUBSPOT, 'Logged In', ben, domain, 0), event(SALESFORCE, 'Logged In', ann, domain, 0)]);
    expect(crm.records('hubspot', 'contacts').get(ann)?.associations).toEqual([]);

    // The company's own event: a domain, no email. The dry-run shows the waiting contacts' links too.
    const upgrade = fx.event(HUBSPOT, 'Upgraded', null, {}, 1, domain);
    const operations = planSync(mapping('hubspot'), upgrade);
    const preview = await previewSync({
      accountId: HUBSPOT,
      eventId: upgrade.eventId,
      timestampMs: upgrade.timestampMs,
      crmType: 'hubspot',
      operations,
      planner: requestPlanner({ type: 'hubspot', accessToken: 'unused', baseUrl: crm.url }),
      reader: createRecordStateReader({ redis: fx.redis, keyPrefix: fx.redisKeyPrefix }),
    });
    const from = crm.calls.length;
    await synced([upgrade, fx.event(SALESFORCE, 'Upgraded', null, {}, 1, domain)]);
    const sent = crm.calls.slice(from).filter((c) => c.token === token(HUBSPOT));
    expect(sent.map((c) => c.path)).toEqual(preview.calls.map((c) => c.path));
    expect(associated(sent.filter((c) => c.path === ASSOCIATE)).length).toBe(2);
    expect(preview.notes.map((n) => n.code)).toEqual(['link_ids_looked_up']);
    expect(plannedLink(mapping('hubspot'), upgrade, operations.length)).toBeUndefined();
    const company = crm.records('hubspot', 'companies').get(domain);
    expect(company).toBeDefined();
    for (const email of [ann, ben]) expect(crm.records('hubspot', 'contacts').get(email)?.associations, email).toEqual([company?.id]);
    const account = crm.records('salesforce', 'Account').get(domain);
    expect(crm.records('salesforce', 'Contact').get(ann)?.properties.AccountId).toBe(account?.id);
    // Linked, so no longer waiting.
    expect(await fx.redis.keys(`${fx.redisKeyPrefix}crm:links:*${encodeURIComponent(domain)}`)).toEqual([]);
  });

  it('a mapping with links.contactCompany false links nothing', async () => {
    const suffix = uniqueSuffix().toLowerCase();
    const email = `dee@${suffix}.io`;
    const domain = `${suffix}.io`;
    await synced([event(OFF, 'Upgraded', email, domain, 0)]);
    expect(crm.records('hubspot', 'companies').has(domain)).toBe(true);
    expect(crm.records('hubspot', 'contacts').get(email)?.associations).toEqual([]);
    expect(crm.calls.filter((c) => c.token === token(OFF) && c.path.startsWith('/crm/v4/'))).toEqual([]);
  });
});

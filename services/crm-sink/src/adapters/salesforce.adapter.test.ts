// Servers: the fake CRM only (fastify on 127.0.0.1), over real HTTP.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { parseSoqlInQuery } from '@ingest/testkit/fake-crm';
import { type ActivityWrite, CrmError, type RecordWrite } from './adapter.js';
import { createSalesforceAdapter } from './salesforce.adapter.js';
import { buildSalesforceReadRequests, salesforceTarget, soqlString } from '@ingest/domain';

const TOKEN = 'sf-session-00D000000000001';
let crm: FakeCrm;
let salesforce: ReturnType<typeof createSalesforceAdapter>;

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [TOKEN] });
  salesforce = createSalesforceAdapter({ type: 'salesforce', accessToken: TOKEN, instanceUrl: crm.url }, { outboundPolicy: FAKE_CRM_OUTBOUND });
});
afterAll(async () => {
  await salesforce.close();
  await crm.stop();
});
beforeEach(() => crm.reset());

async function crmError(promise: Promise<unknown>): Promise<CrmError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CrmError);
  return err as CrmError;
}

const contact = (key: string, properties: RecordWrite['properties']): RecordWrite => ({ object: 'contact', key, properties });

describe('Salesforce adapter', () => {
  it('upserts contacts by external id through sObject Collections and reads them back by SOQL', async () => {
    const result = await salesforce.upsert('contact', [contact('ada@example.com', { LastName: 'Lovelace', Seats__c: 3, Trial__c: true })]);
    expect(result.failures).toEqual([]);
    expect(crm.calls[0]).toMatchObject({ method: 'PATCH', path: '/services/data/v60.0/composite/sobjects/Contact/Ingest_Email__c', batchSize: 1 });
    expect(crm.calls[0]?.body).toEqual({
      allOrNone: false,
      records: [{ attributes: { type: 'Contact' }, LastName: 'Lovelace', Seats__c: 3, Trial__c: true, Ingest_Email__c: 'ada@example.com' }],
    });
    const read = await salesforce.read('contact', ['ada@example.com', 'nobody@example.com'], ['Seats__c', 'Plan__c']);
    expect([...read]).toEqual([['ada@example.com', { Seats__c: 3, Plan__c: null }]]);
  });

  it('uses the external id fields and API version of the credential', async () => {
    const custom = createSalesforceAdapter(
      {
        type: 'salesforce',
        accessToken: TOKEN,
        instanceUrl: crm.url,
        apiVersion: 'v59.0',
        accountExternalIdField: 'Domain__c',
      },
      { outboundPolicy: FAKE_CRM_OUTBOUND },
    );
    try {
      await custom.upsert('company', [{ object: 'company', key: 'acme.com', properties: { Name: 'Acme' } }]);
      expect(crm.calls[0]?.path).toBe('/services/data/v59.0/composite/sobjects/Account/Domain__c');
      expect(crm.records('salesforce', 'Account').get('acme.com')?.properties).toMatchObject({ Domain__c: 'acme.com', Name: 'Acme' });
    } finally {
      await custom.close();
    }
  });

  it('escapes hostile keys in SOQL, so they match exactly and inject nothing', async () => {
    const hostile = ["o'brien@example.com", 'back\\slash@example.com', "x@example.com') OR Name != ('", 'quote"tab\t@example.com', "\\'@example.com"];
    await salesforce.upsert(
      'contact',
      hostile.map((key) => contact(key, { LastName: 'X' })),
    );
    await salesforce.upsert('contact', [contact('bystander@example.com', { LastName: 'Y' })]);
    const read = await salesforce.read('contact', hostile, ['LastName']);
    expect([...read.keys()].sort()).toEqual([...hostile].sort());
    // What the fake parsed is exactly the keys, as Salesforce would parse it.
    const query = new URL(crm.calls.at(-1)?.path ?? '', crm.url).searchParams.get('q') ?? '';
    expect(parseSoqlInQuery(query)).toMatchObject({ sobject: 'Contact', whereField: 'Ingest_Email__c', values: hostile });
  });

  it('escapes SOQL string literals as Salesforce defines them', () => {
    expect(soqlString("it's")).toBe("'it\\'s'");
    expect(soqlString('a\\b')).toBe("'a\\\\b'");
    expect(soqlString('line\nbreak"')).toBe("'line\\nbreak\\\"'");
  });

  it('refuses field names that are not Salesforce API names, before any call', async () => {
    const target = salesforceTarget({ type: 'salesforce', accessToken: TOKEN, instanceUrl: crm.url });
    expect(() => buildSalesforceReadRequests(target, 'contact', ['a@b.co'], ['Name FROM User --'])).toThrow(CrmError);
    const err = await crmError(salesforce.upsert('contact', [contact('ada@example.com', { 'Bad Field': 1 })]));
    expect(err.kind).toBe('permanent');
    expect(crm.calls).toEqual([]);
  });

  it('reports per-record failures of an allOrNone:false save and writes the rest', async () => {
    const result = await salesforce.upsert('contact', [contact('ada@example.com', { LastName: 'L' }), contact('', { LastName: 'M' })]);
    expect(result.failures).toEqual([{ key: '', message: 'MISSING_ARGUMENT: Ingest_Email__c not specified' }]);
    expect(crm.records('salesforce', 'Contact').has('ada@example.com')).toBe(true);
  });

  it('upserts tasks by activity key: the same key twice is one task, linked to its contact', async () => {
    await salesforce.upsert('contact', [contact('ada@example.com', { LastName: 'Lovelace' })]);
    const activity: ActivityWrite = {
      object: 'contact',
      key: 'ada@example.com',
      type: 'signup',
      title: 'Signed up',
      occurredAt: '2026-01-02T03:04:05.000Z',
      idempotencyKey: 'crm:acc:ev1:r1',
    };
    await expect(salesforce.createActivities([activity])).resolves.toEqual({ failures: [] });
    await expect(salesforce.createActivities([activity])).resolves.toEqual({ failures: [] });
    const tasks = crm.records('salesforce', 'Task');
    expect(tasks.size).toBe(1);
    const contactId = crm.records('salesforce', 'Contact').get('ada@example.com')?.id;
    expect(tasks.get('crm:acc:ev1:r1')?.properties).toMatchObject({ Subject: 'Signed up', ActivityDate: '2026-01-02', Status: 'Completed', WhoId: contactId });
  });

  it('reports a task whose contact does not exist as a failure keyed by its idempotency key', async () => {
    const activity: ActivityWrite = {
      object: 'company',
      key: 'ghost.com',
      type: 'x',
      title: 'x',
      occurredAt: '2026-01-02T03:04:05.000Z',
      idempotencyKey: 'k1',
    };
    const result = await salesforce.createActivities([activity]);
    expect(result.failures).toEqual([{ key: 'k1', message: expect.stringContaining('INVALID_FIELD: Foreign key external ID: ghost.com not found') as string }]);
  });

  it('refuses a batch over 200 records', async () => {
    const records = Array.from({ length: 201 }, (_, i) => contact(`u${i}@example.com`, { LastName: 'X' }));
    await expect(salesforce.upsert('contact', records)).rejects.toThrow(/exceeds the limit of 200/);
    await expect(salesforce.upsert('contact', records.slice(1))).resolves.toEqual({ failures: [] });
  });

  it('classifies INVALID_SESSION_ID (401) as auth without leaking the token', async () => {
    const wrong = createSalesforceAdapter(
      { type: 'salesforce', accessToken: 'sf-expired-session-secret', instanceUrl: crm.url },
      { outboundPolicy: FAKE_CRM_OUTBOUND },
    );
    try {
      const err = await crmError(wrong.read('contact', ['ada@example.com'], []));
      expect(err).toMatchObject({ kind: 'auth', status: 401 });
      expect(err.message).toBe('Salesforce answered 401: INVALID_SESSION_ID: Session expired or invalid');
    } finally {
      await wrong.close();
    }
  });

  it('classifies REQUEST_LIMIT_EXCEEDED (403) as rate_limited and 429 with Retry-After by its header', async () => {
    const limited = await startFakeCrm({ tokens: [TOKEN], rateLimits: { salesforce: { max: 1, windowMs: 60_000 } } });
    const adapter = createSalesforceAdapter({ type: 'salesforce', accessToken: TOKEN, instanceUrl: limited.url }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await adapter.read('contact', ['a@example.com'], []);
      expect(await crmError(adapter.read('contact', ['a@example.com'], []))).toMatchObject({ kind: 'rate_limited', status: 403, retryAfterMs: 60_000 });
    } finally {
      await adapter.close();
      await limited.stop();
    }
    crm.failNext({ status: 429, retryAfterSeconds: 2, crm: 'salesforce' });
    expect(await crmError(salesforce.read('contact', ['a@example.com'], []))).toMatchObject({ kind: 'rate_limited', retryAfterMs: 2000 });
  });

  it('classifies 503 as transient and other 4xx as permanent', async () => {
    crm.failNext({ status: 503 });
    expect((await crmError(salesforce.upsert('contact', [contact('a@example.com', {})]))).kind).toBe('transient');
    crm.failNext({ status: 400 });
    expect(await crmError(salesforce.upsert('contact', [contact('a@example.com', {})]))).toMatchObject({ kind: 'permanent', status: 400 });
  });
});

// Servers: the fake CRM itself (fastify on 127.0.0.1), called with plain fetch.
import { signWebhook, standardWebhookHeaders } from '@ingest/domain';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_WEBHOOK_SECRET, type FakeCrm, startFakeCrm } from './fake-crm.js';
import { parseSoqlInQuery } from './fake-soql.js';

const TOKEN = 'fake-test-token';
let crm: FakeCrm;

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [TOKEN] });
});
afterAll(() => crm.stop());
beforeEach(() => crm.reset());

async function call(method: string, path: string, body: unknown, token = TOKEN): Promise<{ status: number; body: unknown; retryAfter: string | null }> {
  const response = await fetch(`${crm.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as unknown, retryAfter: response.headers.get('retry-after') };
}

const hubspotInputs = (n: number) => ({ inputs: Array.from({ length: n }, (_, i) => ({ id: `u${i}@example.com`, idProperty: 'email', properties: {} })) });
const salesforceRecords = (n: number) => ({
  allOrNone: false,
  records: Array.from({ length: n }, (_, i) => ({ attributes: { type: 'Contact' }, Ingest_Email__c: `u${i}@example.com` })),
});

describe('fake CRM', () => {
  it('refuses batches over the limits in each CRM’s error format', async () => {
    const hs = await call('POST', '/crm/v3/objects/contacts/batch/upsert', hubspotInputs(101));
    expect(hs).toMatchObject({ status: 400, body: { status: 'error', category: 'VALIDATION_ERROR', message: expect.stringContaining('limit') as string } });
    const sf = await call('PATCH', '/services/data/v60.0/composite/sobjects/Contact/Ingest_Email__c', salesforceRecords(201));
    expect(sf).toMatchObject({ status: 400, body: [{ errorCode: 'EXCEEDED_ID_LIMIT' }] });
    expect(crm.calls.map((c) => [c.crm, c.batchSize, c.status])).toEqual([
      ['hubspot', 101, 400],
      ['salesforce', 201, 400],
    ]);
  });

  it('refuses unknown tokens with a 401 in each CRM’s error format', async () => {
    expect(await call('POST', '/crm/v3/objects/contacts/batch/upsert', hubspotInputs(1), 'nope')).toMatchObject({
      status: 401,
      body: { category: 'INVALID_AUTHENTICATION' },
    });
    expect(await call('PATCH', '/services/data/v60.0/composite/sobjects/Contact/Ingest_Email__c', salesforceRecords(1), 'nope')).toMatchObject({
      status: 401,
      body: [{ errorCode: 'INVALID_SESSION_ID' }],
    });
    expect(crm.records('hubspot', 'contacts').size).toBe(0);
  });

  it('checks request shapes: HubSpot values must be strings, Salesforce records need their type', async () => {
    const hs = await call('POST', '/crm/v3/objects/contacts/batch/upsert', {
      inputs: [{ id: 'a@example.com', idProperty: 'email', properties: { seats: 3 } }],
    });
    expect(hs.status).toBe(400);
    const sf = await call('PATCH', '/services/data/v60.0/composite/sobjects/Contact/Ingest_Email__c', {
      allOrNone: false,
      records: [{ Ingest_Email__c: 'a@example.com' }],
    });
    expect(sf).toMatchObject({ status: 200, body: [{ success: false, errors: [{ statusCode: 'INVALID_TYPE' }] }] });
  });

  it('answers injected faults a given number of times, only for the given token', async () => {
    crm.failNext({ status: 429, retryAfterSeconds: 2, times: 2, token: TOKEN });
    crm.failNext({ status: 503, token: 'someone-else' });
    const first = await call('POST', '/crm/v3/objects/contacts/batch/read', { idProperty: 'email', properties: [], inputs: [] });
    expect(first).toMatchObject({ status: 429, retryAfter: '2', body: { errorType: 'RATE_LIMIT' } });
    expect((await call('POST', '/crm/v3/objects/contacts/batch/read', { idProperty: 'email', properties: [], inputs: [] })).status).toBe(429);
    expect((await call('POST', '/crm/v3/objects/contacts/batch/read', { idProperty: 'email', properties: [], inputs: [] })).status).toBe(200);
  });

  it('verifies webhook signatures and forgets everything on reset', async () => {
    const body = JSON.stringify({
      type: 'records.upsert',
      object: 'company',
      records: [{ key: 'acme.com', properties: { tier: 'gold' } }],
      sentAt: '2026-01-01T00:00:00Z',
    });
    const standard = (secret: string) => standardWebhookHeaders(secret, 'msg_test', body);
    const post = (signature: string, headers: Record<string, string> = standard(FAKE_WEBHOOK_SECRET)) =>
      fetch(`${crm.url}/webhook/acme`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-ingest-signature': signature, ...headers }, body });
    expect((await post(signWebhook('whsec_other', body))).status).toBe(401);
    expect((await post(signWebhook(FAKE_WEBHOOK_SECRET, body, Math.floor(Date.now() / 1000) - 3600))).status).toBe(401);
    // Both signatures must verify: the Standard Webhooks one (checked with the standardwebhooks library) and the older one.
    expect((await post(signWebhook(FAKE_WEBHOOK_SECRET, body), standard('whsec_b3RoZXI='))).status).toBe(401);
    expect((await post(signWebhook(FAKE_WEBHOOK_SECRET, body), {})).status).toBe(401);
    expect((await post(signWebhook(FAKE_WEBHOOK_SECRET, body))).status).toBe(200);
    expect(crm.records('webhook', 'company').get('acme.com')?.properties).toEqual({ tier: 'gold' });
    crm.reset();
    expect(crm.records('webhook', 'company').size).toBe(0);
    expect(crm.calls).toEqual([]);
  });

  it('parses SOQL string literals strictly', () => {
    expect(parseSoqlInQuery("SELECT Id FROM Contact WHERE Ingest_Email__c IN ('a\\'b', 'c\\\\d')")).toEqual({
      fields: ['Id'],
      sobject: 'Contact',
      whereField: 'Ingest_Email__c',
      values: ["a'b", 'c\\d'],
    });
    expect(typeof parseSoqlInQuery("SELECT Id FROM Contact WHERE Ingest_Email__c IN ('a'b')")).toBe('string');
    expect(typeof parseSoqlInQuery("SELECT Id FROM Contact WHERE Ingest_Email__c IN ('a') OR Name != 'x'")).toBe('string');
  });
});

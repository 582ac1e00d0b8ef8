/**
 * Real servers: Kafka (the control plane's topics and the sink's) and Redis (the sink's record
 * state, which the dry-run reads); the CRM is the test kit's fake CRM (@ingest/testkit/fake-crm) over real HTTP,
 * called by the real adapters of the real sink engine. The dry-run is the console's admin route
 * over the same control plane and the same Redis key prefix.
 *
 * Issue 5: "dry-run output matches what the sink then does": the calls the fake CRM records for
 * an event equal, method, path and body, the calls the dry-run showed for it just before.
 */
import type { CrmMapping, DryRunResult, EventRecord } from '@ingest/schemas';
import { syncStateKey } from '@ingest/domain';
import { uniqueSuffix } from '@ingest/testkit';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminTestStack, startAdminTestStack } from '@ingest/testkit/gateway';
import { createAdapter } from './adapters/index.js';
import { FAKE_CRM_OUTBOUND, FAKE_WEBHOOK_SECRET, type FakeCall, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { createSinkFixture, everyKindMapping, type SinkFixture, T0 } from './crm-sink.fixture.js';

const ADMIN_TOKEN = 'admin-token-for-the-crm-sink-dry-run-tests';
const HUBSPOT_TOKEN = 'tok-dry-run-hubspot';
const SALESFORCE_TOKEN = 'tok-dry-run-salesforce';

let crm: FakeCrm;
let fx: SinkFixture;
let stack: AdminTestStack;
let app: FastifyInstance;

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [HUBSPOT_TOKEN, SALESFORCE_TOKEN] });
  fx = await createSinkFixture({ createAdapter: (credential) => createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND }) });
  // The gateway's dry-run reads the sink's Redis state: same key prefix, as REDIS_KEY_PREFIX is for both in production.
  stack = await startAdminTestStack({ redisKeyPrefix: fx.redisKeyPrefix });
  app = await stack.app(ADMIN_TOKEN);
  await fx.startSink(`crm-sink-dry-run-${uniqueSuffix()}`, { mappings: stack.controlPlane });
});

afterAll(async () => {
  await fx?.cleanup();
  await stack?.close();
  await crm?.stop();
});

interface Call {
  method: string;
  path: string;
  body?: unknown;
}

async function account(mapping: CrmMapping, credential: Parameters<AdminTestStack['controlPlane']['putCrmCredential']>[2]): Promise<string> {
  const { id } = await stack.controlPlane.createAccount({ name: 'dry-run', plan: 'pro' });
  await stack.controlPlane.putCrmCredential(id, mapping.crm.credentialsRef, credential);
  await stack.controlPlane.putMapping(id, mapping, 'test');
  return id;
}

/** The sample as a client sends it, and the same event as the processor hands it to the sink. */
function sample(accountId: string, eventName: string, properties: Record<string, unknown>): { input: Record<string, unknown>; record: EventRecord } {
  const eventId = `dry-${uniqueSuffix()}`;
  const input = { eventId, eventName, email: 'ada@dry.io', domain: 'dry.io', timestamp: new Date(T0).toISOString(), properties };
  const record: EventRecord = {
    v: 1,
    accountId,
    eventId,
    eventName,
    email: 'ada@dry.io',
    domain: 'dry.io',
    timestampMs: T0,
    receivedAtMs: Date.now(),
    properties,
    source: 'api',
    jobId: null,
  };
  return { input, record };
}

async function dryRun(accountId: string, event: Record<string, unknown>): Promise<DryRunResult> {
  const res = await app.inject({
    method: 'POST',
    url: `/admin/v1/accounts/${accountId}/crm/mapping/dry-run`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    payload: { event },
  });
  expect(res.statusCode).toBe(200);
  return res.json();
}

/** Lets the sink process the event (again: its sync state is cleared first) and returns the calls the fake CRM received meanwhile. */
async function sinkCalls(record: EventRecord, belongs: (c: FakeCall) => boolean): Promise<Call[]> {
  const from = crm.calls.length;
  await fx.redis.del(syncStateKey(fx.redisKeyPrefix, record.accountId, record.eventId));
  await fx.produce([record]);
  await fx.settled([record]);
  expect((await fx.states([record]))[0]?.state).toBe('synced');
  return crm.calls
    .slice(from)
    .filter(belongs)
    .map(({ method, path, body }) => (method === 'GET' ? { method, path } : { method, path, body }));
}

/** The one thing a dry-run cannot know: the id HubSpot gives a record, shown as a placeholder. */
function withHubSpotIds(calls: Call[]): Call[] {
  return JSON.parse(
    JSON.stringify(calls).replace(/<id of (contact|company) ([^>]+)>/g, (_, object: string, key: string) => {
      const id = crm.records('hubspot', object === 'contact' ? 'contacts' : 'companies').get(key)?.id;
      if (id === undefined) throw new Error(`the fake CRM has no ${object} ${key}`);
      return id;
    }),
  ) as Call[];
}

describe('dry-run output matches what the sink then does', () => {
  it('HubSpot: every call, in order, with its exact body; then the same event again: not applied again, as the dry-run says', async () => {
    const mapping = everyKindMapping('hub');
    const accountId = await account(mapping, { type: 'hubspot', accessToken: HUBSPOT_TOKEN, baseUrl: crm.url });
    const hubspot = (c: FakeCall) => c.token === HUBSPOT_TOKEN;

    // A page view first, so the sink holds some state and the sample continues from it.
    const first = sample(accountId, 'Page Viewed', { path: '/pricing' });
    await sinkCalls(first.record, hubspot);

    const signup = sample(accountId, 'Signed Up', { plan: 'pro', source: 'ads' });
    const planned = await dryRun(accountId, signup.input);
    expect(planned.calls.map((c) => c.path)).toEqual([
      '/crm/v3/objects/contacts/batch/read',
      '/crm/v3/objects/contacts/batch/upsert',
      '/crm/v3/objects/contacts/batch/upsert',
      '/crm/v3/objects/notes/batch/create',
      '/crm/v3/objects/companies/batch/read',
      '/crm/v3/objects/companies/batch/upsert',
      // The contact linked to its company: both ids read, then the association.
      '/crm/v3/objects/contacts/batch/read',
      '/crm/v3/objects/companies/batch/read',
      '/crm/v4/associations/contacts/companies/batch/associate/default',
    ]);
    expect(await sinkCalls(signup.record, hubspot)).toEqual(withHubSpotIds(planned.calls));

    const page = sample(accountId, 'Page Viewed', { path: '/docs' });
    const pagePlan = await dryRun(accountId, page.input);
    expect(pagePlan.calls[0]?.body).toMatchObject({ inputs: [{ properties: { page_views: '2', pages: '/pricing;/docs' } }] });
    expect(await sinkCalls(page.record, hubspot)).toEqual(withHubSpotIds(pagePlan.calls));

    const again = await dryRun(accountId, page.input);
    expect(again.notes).toEqual([
      expect.objectContaining({ code: 'already_applied', ruleId: 'page', fields: ['page_views', 'last_seen_at', 'pages'] }),
      expect.objectContaining({ code: 'link_ids_looked_up', object: 'contact', key: 'ada@dry.io' }),
    ]);
    expect(again.calls).toEqual(pagePlan.calls);
    expect(await sinkCalls(page.record, hubspot)).toEqual(withHubSpotIds(again.calls));
    expect(crm.records('hubspot', 'contacts').get('ada@dry.io')?.properties).toMatchObject({ page_views: '2' });
  });

  it('webhook: the signed deliveries carry exactly the bodies shown (sentAt aside, which is the time of sending)', async () => {
    const mapping: CrmMapping = { ...everyKindMapping('hooks'), crm: { type: 'webhook', credentialsRef: 'hooks' } };
    const receiver = `dry${uniqueSuffix()}`.replace(/[^a-z0-9]/gi, '');
    const accountId = await account(mapping, { type: 'webhook', url: `${crm.url}/webhook/${receiver}`, secret: FAKE_WEBHOOK_SECRET });
    const mine = (c: FakeCall) => c.crm === 'webhook' && c.token === receiver;
    const withoutSentAt = (calls: Call[]) => calls.map((c) => ({ ...c, body: { ...(c.body as object), sentAt: 'at send time' } }));

    const signup = sample(accountId, 'Signed Up', { plan: 'pro', source: 'ads' });
    const planned = await dryRun(accountId, signup.input);
    expect(planned.calls).toHaveLength(3);
    expect(planned.calls.every((c) => c.method === 'POST' && c.path === `/webhook/${receiver}`)).toBe(true);
    expect(planned.notes.map((n) => n.code)).toEqual(['sent_at_is_send_time']);
    expect(withoutSentAt(await sinkCalls(signup.record, mine))).toEqual(withoutSentAt(planned.calls));

    const again = await dryRun(accountId, signup.input);
    expect(again.notes.map((n) => [n.code, n.ruleId])).toEqual([
      ['already_applied', 'signup'],
      ['activity_already_created', 'signup'],
      ['already_applied', 'company-signup'],
      ['sent_at_is_send_time', undefined],
    ]);
    expect(again.calls).toHaveLength(2);
    expect(withoutSentAt(await sinkCalls(signup.record, mine))).toEqual(withoutSentAt(again.calls));
  });

  it('Salesforce: the SOQL read, the composite upserts and the task, as shown', async () => {
    const mapping: CrmMapping = {
      version: 1,
      crm: { type: 'salesforce', credentialsRef: 'sf' },
      rules: [
        {
          id: 'signup',
          when: { eventName: 'Signed Up' },
          object: 'contact',
          actions: [
            { op: 'set', field: 'LastName', from: { constant: 'Lovelace' } },
            { op: 'set', field: 'Plan__c', from: { property: 'plan' } },
            { op: 'increment', field: 'Signups__c' },
          ],
          activity: { type: 'signup', title: 'Signed up on {{properties.plan}}' },
        },
        { id: 'account', when: { eventName: 'Signed Up' }, object: 'company', actions: [{ op: 'set', field: 'Name', from: { event: 'domain' } }] },
      ],
    };
    const accountId = await account(mapping, { type: 'salesforce', accessToken: SALESFORCE_TOKEN, instanceUrl: crm.url });
    const salesforce = (c: FakeCall) => c.token === SALESFORCE_TOKEN;

    const signup = sample(accountId, 'Signed Up', { plan: 'pro' });
    const planned = await dryRun(accountId, signup.input);
    // Contact read, Contact upsert, Task, Account upsert; then the link: Contact and Account queried, Contact.AccountId set.
    expect(planned.calls.map((c) => c.method)).toEqual(['GET', 'PATCH', 'PATCH', 'PATCH', 'GET', 'GET', 'PATCH']);
    const sent = await sinkCalls(signup.record, salesforce);
    const sfAccountId = crm.records('salesforce', 'Account').get('dry.io')?.id;
    expect(sfAccountId).toBeDefined();
    expect(sent).toEqual(JSON.parse(JSON.stringify(planned.calls).replace('<id of company dry.io>', sfAccountId as string)));
    expect(crm.records('salesforce', 'Contact').get('ada@dry.io')?.properties.AccountId).toBe(sfAccountId);
  });
});

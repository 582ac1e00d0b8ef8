/**
 * Real servers: Kafka (the control plane's compacted topics, from the local stack or a
 * container; see scripts/test). The HTTP side runs in-process through fastify's inject.
 */
import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { createOutboundPolicy, ledgerKey, planSync, recordStateKeys } from '@ingest/domain';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminTestStack, startAdminTestStack } from '@ingest/testkit/gateway';
import { testCredentialKeys } from '@ingest/testkit';

const TOKEN = 'admin-secret-token-for-the-crm-route-tests';
const auth = { authorization: `Bearer ${TOKEN}` };

let stack: AdminTestStack;
let app: FastifyInstance;

beforeAll(async () => {
  stack = await startAdminTestStack();
  app = await stack.app(TOKEN);
});

afterAll(async () => {
  await stack?.close();
});

const mapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'main' },
  rules: [
    {
      id: 'signup',
      when: { eventName: 'Signed Up', where: [{ property: 'plan', op: 'in', value: ['pro', 'team'] }] },
      object: 'contact',
      actions: [
        { op: 'set', field: 'plan', from: { property: 'plan' } },
        { op: 'setOnce', field: 'first_plan', from: { property: 'plan' } },
        { op: 'increment', field: 'signups' },
        { op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } },
        { op: 'append', field: 'events', from: { event: 'eventName' } },
      ],
      activity: { type: 'product_event', title: '{{eventName}} on {{properties.plan}}' },
    },
    { id: 'company', when: { eventName: 'Signed Up' }, object: 'company', actions: [{ op: 'set', field: 'active', from: { constant: true } }] },
    { id: 'churn', when: { eventName: 'Churned' }, object: 'contact', actions: [{ op: 'set', field: 'churned', from: { constant: true } }] },
  ],
} satisfies CrmMapping;

function expectProblem(res: LightMyRequestResponse, status: number, type: string): Record<string, unknown> {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ status, type, title: expect.any(String), detail: expect.any(String), requestId: expect.any(String) });
  return body;
}

async function newAccount(): Promise<string> {
  return (await stack.controlPlane.createAccount({ name: 'CRM test', plan: 'pro' })).id;
}

const base = (accountId: string) => `/admin/v1/accounts/${accountId}/crm`;
const putMapping = (accountId: string, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({ method: 'PUT', url: `${base(accountId)}/mapping`, headers: { ...auth, ...headers }, payload: payload as object });

describe('CRM mapping admin API', () => {
  it('stores versions (201, ETag), shows the current one and every version newest first', async () => {
    const accountId = await newAccount();
    expectProblem(await app.inject({ method: 'GET', url: `${base(accountId)}/mapping`, headers: auth }), 404, '/problems/not-found');

    const first = await putMapping(accountId, mapping);
    expect(first.statusCode).toBe(201);
    expect(first.headers.etag).toBe('"1"');
    expect(first.json()).toMatchObject({ accountId, version: 1, author: 'admin', mapping });
    const second = await putMapping(accountId, { ...mapping, rules: mapping.rules.slice(0, 1) });
    expect(second.json()).toMatchObject({ version: 2 });

    const current = await app.inject({ method: 'GET', url: `${base(accountId)}/mapping`, headers: auth });
    expect(current.statusCode).toBe(200);
    expect(current.headers.etag).toBe('"2"');
    expect(current.json()).toEqual(second.json());

    const versions = await app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions`, headers: auth });
    expect(versions.statusCode).toBe(200);
    const list = versions.json() as { versions: { version: number; author: string; createdAt: string }[] };
    expect(list.versions.map((v) => [v.version, v.author])).toEqual([
      [2, 'admin'],
      [1, 'admin'],
    ]);
    expect(list.versions.every((v) => !Number.isNaN(Date.parse(v.createdAt)))).toBe(true);

    const one = await app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions/1`, headers: auth });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual(first.json());
    expectProblem(await app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions/3`, headers: auth }), 404, '/problems/not-found');
    expectProblem(await app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions/0`, headers: auth }), 400, '/problems/validation-error');
  });

  it('refuses an invalid document with 400 and every error as a JSON Pointer, storing nothing', async () => {
    const accountId = await newAccount();
    const bad = {
      version: 1,
      crm: { type: 'hubspot', credentialsRef: 'svc_live_abc' },
      rules: [
        { id: 'a', when: { eventName: 'x' }, object: 'contact', actions: [{ op: 'multiply', field: 'n' }] },
        {
          id: 'a',
          when: { eventName: 'x', where: [{ property: 'p', op: 'gt', value: 'high' }] },
          object: 'company',
          actions: [{ op: 'increment', field: 'n' }],
        },
      ],
      extra: true,
    };
    const body = expectProblem(await putMapping(accountId, bad), 400, '/problems/validation-error');
    expect((body.errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/extra', 'unknown_field'],
      ['/rules/0/actions/0/op', 'invalid_value'],
    ]);

    // Once the shape is right, the rules a schema cannot say are checked, again all at once.
    const semantic = { ...bad, extra: undefined, rules: [bad.rules[1], bad.rules[1]] };
    const body2 = expectProblem(await putMapping(accountId, JSON.parse(JSON.stringify(semantic))), 400, '/problems/validation-error');
    expect((body2.errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/crm/credentialsRef', 'looks_like_secret'],
      ['/rules/0/when/where/0/value', 'invalid_value'],
      ['/rules/1/id', 'duplicate'],
      ['/rules/1/when/where/0/value', 'invalid_value'],
    ]);
    expect(JSON.stringify(body2)).not.toContain('svc_live_abc');
    expectProblem(
      await app.inject({ method: 'PUT', url: `${base(accountId)}/mapping`, headers: { ...auth, 'content-type': 'application/json' }, payload: '[1]' }),
      400,
      '/problems/validation-error',
    );
    expect(stack.controlPlane.mappingVersions(accountId)).toEqual([]);
  });

  it('answers 404 for an unknown account on every route', async () => {
    const accountId = 'acc_doesnotexist';
    expectProblem(await putMapping(accountId, mapping), 404, '/problems/not-found');
    for (const url of [
      `${base(accountId)}/mapping`,
      `${base(accountId)}/mapping/versions`,
      `${base(accountId)}/mapping/versions/1`,
      `${base(accountId)}/credentials`,
    ]) {
      expectProblem(await app.inject({ method: 'GET', url, headers: auth }), 404, '/problems/not-found');
    }
    const dryRun = await app.inject({
      method: 'POST',
      url: `${base(accountId)}/mapping/dry-run`,
      headers: auth,
      payload: { event: { eventName: 'x', email: 'a@b.co' } },
    });
    expectProblem(dryRun, 404, '/problems/not-found');
    expectProblem(
      await app.inject({ method: 'PUT', url: `${base(accountId)}/credentials/main`, headers: auth, payload: { type: 'hubspot', accessToken: 't' } }),
      404,
      '/problems/not-found',
    );
  });

  it('honours If-Match: 412 with the current version when stale, 201 when current', async () => {
    const accountId = await newAccount();
    const noneYet = expectProblem(await putMapping(accountId, mapping, { 'if-match': '"1"' }), 412, '/problems/precondition-failed');
    expect(noneYet.currentVersion).toBeNull();
    expectProblem(await putMapping(accountId, mapping, { 'if-match': '*' }), 412, '/problems/precondition-failed');
    await putMapping(accountId, mapping);
    await putMapping(accountId, mapping);

    const stale = expectProblem(await putMapping(accountId, mapping, { 'if-match': '"1"' }), 412, '/problems/precondition-failed');
    expect(stale.currentVersion).toBe(2);
    const malformed = expectProblem(await putMapping(accountId, mapping, { 'if-match': 'garbage' }), 400, '/problems/validation-error');
    expect(malformed.errors).toEqual([expect.objectContaining({ field: '/headers/if-match', code: 'invalid_format' })]);
    // A broken document hears that it is broken, not that it is stale.
    expectProblem(await putMapping(accountId, { ...mapping, rules: [] }, { 'if-match': '"1"' }), 400, '/problems/validation-error');
    expect(stack.controlPlane.currentMapping(accountId)?.version).toBe(2);

    const ok = await putMapping(accountId, mapping, { 'if-match': '"2"' });
    expect(ok.statusCode).toBe(201);
    expect(ok.json()).toMatchObject({ version: 3 });
    expect((await putMapping(accountId, mapping, { 'if-match': '*' })).statusCode).toBe(201);
  });
});

describe('CRM dry-run', () => {
  const sample = {
    eventName: 'Signed Up',
    email: '  Ada@Example.COM ',
    domain: 'Example.com',
    timestamp: '2026-11-20T10:00:00Z',
    eventId: 'evt-1',
    properties: { plan: 'pro' },
  };
  // The event as the gateway normalises it.
  const record: EventRecord = {
    v: 1,
    accountId: '',
    eventId: 'evt-1',
    eventName: 'Signed Up',
    email: 'ada@example.com',
    domain: 'example.com',
    timestampMs: Date.parse('2026-11-20T10:00:00Z'),
    receivedAtMs: 0,
    properties: { plan: 'pro' },
    source: 'api',
    jobId: null,
  };

  it('shows for a sample event exactly what planSync plans with the current mapping, and why each rule (mis)matched', async () => {
    const accountId = await newAccount();
    expectProblem(
      await app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample } }),
      404,
      '/problems/not-found',
    );
    await putMapping(accountId, mapping);
    const res = await app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample } });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { mappingVersion: number; operations: unknown[]; rules: unknown[] };
    expect(body.mappingVersion).toBe(1);
    expect(body.operations).toEqual(planSync(mapping, { ...record, accountId }));
    expect(body.operations).toHaveLength(2);
    expect(body.rules).toEqual([
      { ruleId: 'signup', matched: true },
      { ruleId: 'company', matched: true },
      { ruleId: 'churn', matched: false, reason: 'event_name' },
    ]);
  });

  it('uses a draft instead of the current mapping (mappingVersion null)', async () => {
    const accountId = await newAccount();
    const draft = { ...mapping, rules: [mapping.rules[0]] };
    const event = { ...sample, domain: undefined, properties: { plan: 'free' } };
    const res = await app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event, mapping: draft } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      mappingVersion: null,
      eventId: 'evt-1',
      operations: [],
      rules: [{ ruleId: 'signup', matched: false, reason: 'condition' }],
      crm: { type: 'hubspot', credentialsRef: 'main', credential: 'missing' },
      calls: [],
      notes: [{ code: 'credential_missing', message: expect.stringContaining('no stored credential named main') }],
    });
  });

  it("shows the exact HTTP calls for the sink's current state: reads of fields it never held, absolute values, the activity", async () => {
    const accountId = await newAccount();
    await putMapping(accountId, mapping);
    await stack.controlPlane.putCrmCredential(accountId, 'main', { type: 'hubspot', accessToken: 'pat-secret-never-shown', baseUrl: 'http://crm.test/hub/' });
    const keys = recordStateKeys(stack.redisKeyPrefix);
    // The sink has counted 4 signups and holds events and first_plan; it never held last_seen_at.
    const stateKey = keys.state(accountId, 'contact', 'ada@example.com');
    await stack.redis.hset(stateKey, { 'n:signups': '4', 'l:events': '["Logged In"]', 'o:first_plan': '{"crm":1}' });
    const before = await stack.redis.hgetall(stateKey);

    const res = await app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample } });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { calls: unknown[]; notes: { code: string }[]; crm: unknown };
    expect(body.crm).toEqual({ type: 'hubspot', credentialsRef: 'main', credential: 'stored' });
    const ledger = ledgerKey(accountId, 'evt-1', 'signup');
    expect(body.calls).toEqual([
      {
        method: 'POST',
        path: '/hub/crm/v3/objects/contacts/batch/read',
        body: { idProperty: 'email', properties: ['email', 'last_seen_at'], inputs: [{ id: 'ada@example.com' }] },
      },
      {
        method: 'POST',
        path: '/hub/crm/v3/objects/contacts/batch/upsert',
        body: {
          inputs: [
            {
              id: 'ada@example.com',
              idProperty: 'email',
              // first_plan is left out: the CRM had a value when the sink first looked.
              properties: { plan: 'pro', signups: '5', last_seen_at: String(Date.parse('2026-11-20T10:00:00Z')), events: 'Logged In;Signed Up' },
            },
          ],
        },
      },
      {
        method: 'POST',
        path: '/hub/crm/v3/objects/contacts/batch/upsert',
        body: { inputs: [{ id: 'ada@example.com', idProperty: 'email', properties: { email: 'ada@example.com' } }] },
      },
      {
        method: 'POST',
        path: '/hub/crm/v3/objects/notes/batch/create',
        body: {
          inputs: [
            {
              properties: {
                hs_timestamp: '2026-11-20T10:00:00.000Z',
                hs_note_body: '<strong>product_event</strong>: Signed Up on pro',
                ingest_activity_key: ledger,
              },
              associations: [{ to: { id: '<id of contact ada@example.com>' }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: 202 }] }],
            },
          ],
        },
      },
      {
        method: 'POST',
        path: '/hub/crm/v3/objects/companies/batch/upsert',
        body: { inputs: [{ id: 'example.com', idProperty: 'domain', properties: { active: 'true' } }] },
      },
    ]);
    expect(body.notes.map((n) => n.code)).toEqual(['crm_values_assumed_empty', 'record_id_placeholder']);
    expect(res.body).not.toContain('pat-secret-never-shown');
    // Nothing written: the state is as it was, no ledger or activity mark.
    expect(await stack.redis.hgetall(stateKey)).toEqual(before);
    expect(await stack.redis.exists(keys.ledger(ledger), keys.activity(ledger))).toBe(0);
  });

  it('says an event already applied is not applied again, and an activity already created is not created again', async () => {
    const accountId = await newAccount();
    await putMapping(accountId, mapping);
    await stack.controlPlane.putCrmCredential(accountId, 'main', { type: 'hubspot', accessToken: 'pat-x', baseUrl: 'http://crm.test' });
    const keys = recordStateKeys(stack.redisKeyPrefix);
    const ledger = ledgerKey(accountId, 'evt-1', 'signup');
    const at = String(Date.parse('2026-11-20T10:00:00Z'));
    await stack.redis.hset(keys.state(accountId, 'contact', 'ada@example.com'), {
      'n:signups': '5',
      'n:last_seen_at': at,
      'l:events': '["Signed Up"]',
      'o:first_plan': '{"v":"pro"}',
    });
    await stack.redis.set(keys.ledger(ledger), '1', 'EX', 600);
    await stack.redis.set(keys.activity(ledger), '1', 'EX', 600);

    const res = await app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample } });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { calls: { path: string; body: unknown }[]; notes: { code: string; ruleId?: string; fields?: string[] }[] };
    expect(body.calls.map((c) => c.path)).toEqual(['/crm/v3/objects/contacts/batch/upsert', '/crm/v3/objects/companies/batch/upsert']);
    expect(body.calls[0]?.body).toEqual({
      inputs: [
        { id: 'ada@example.com', idProperty: 'email', properties: { plan: 'pro', first_plan: 'pro', signups: '5', last_seen_at: at, events: 'Signed Up' } },
      ],
    });
    expect(body.notes).toEqual([
      expect.objectContaining({ code: 'already_applied', ruleId: 'signup', fields: ['signups', 'last_seen_at', 'events', 'first_plan'] }),
      expect.objectContaining({ code: 'activity_already_created', ruleId: 'signup' }),
    ]);
  });

  it('shows Salesforce calls, and a field Salesforce would refuse as a note instead of a call', async () => {
    const accountId = await newAccount();
    const sf = {
      version: 1,
      crm: { type: 'salesforce', credentialsRef: 'sf' },
      rules: [
        { id: 'contact', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'Plan__c', from: { property: 'plan' } }] },
        { id: 'company', when: { eventName: 'Signed Up' }, object: 'company', actions: [{ op: 'set', field: 'bad.name', from: { property: 'plan' } }] },
      ],
    } satisfies CrmMapping;
    await stack.controlPlane.putCrmCredential(accountId, 'sf', { type: 'salesforce', accessToken: 'sf-secret', instanceUrl: 'https://acme.my.salesforce.com' });
    const res = await app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample, mapping: sf } });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { calls: unknown[]; notes: unknown[] };
    expect(body.calls).toEqual([
      {
        method: 'PATCH',
        path: '/services/data/v60.0/composite/sobjects/Contact/Ingest_Email__c',
        body: { allOrNone: false, records: [{ attributes: { type: 'Contact' }, Plan__c: 'pro', Ingest_Email__c: 'ada@example.com' }] },
      },
    ]);
    expect(body.notes).toEqual([expect.objectContaining({ code: 'record_refused', object: 'company', key: 'example.com' })]);
  });

  it('builds the calls of the mapping type when the credential is for another CRM, and says the sink would make none', async () => {
    const accountId = await newAccount();
    await stack.controlPlane.putCrmCredential(accountId, 'main', { type: 'webhook', url: 'http://hooks.test/in', secret: 'whsec_x' });
    const res = await app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample, mapping } });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { crm: { credential: string }; calls: { path: string }[]; notes: { code: string }[] };
    expect(body.crm.credential).toBe('mismatch');
    expect(body.calls[0]?.path).toBe('/crm/v3/objects/contacts/batch/read');
    expect(body.notes[0]?.code).toBe('credential_mismatch');
  });

  it('refuses an invalid event and an invalid draft together, with pointers into the request', async () => {
    const accountId = await newAccount();
    const payload = { event: { eventName: '', email: 'not-an-email' }, mapping: { ...mapping, crm: { type: 'hubspot' } } };
    const body = expectProblem(
      await app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload }),
      400,
      '/problems/validation-error',
    );
    const fields = (body.errors as { field: string }[]).map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['/event/eventName', '/mapping/crm/credentialsRef']));
    expect(fields.every((f) => f.startsWith('/event/') || f.startsWith('/mapping/'))).toBe(true);
    const envelope = expectProblem(
      await app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { evnt: {} } }),
      400,
      '/problems/validation-error',
    );
    expect((envelope.errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/event', 'required'],
      ['/evnt', 'unknown_field'],
    ]);
  });
});

describe('deleting mappings and credentials', () => {
  it('deletes a mapping as a new version that stops sync, keeps its history, and lets a later PUT start again', async () => {
    const accountId = await newAccount();
    expect((await putMapping(accountId, mapping)).statusCode).toBe(201);
    expectProblem(
      await app.inject({ method: 'DELETE', url: `${base(accountId)}/mapping`, headers: { ...auth, 'if-match': '"7"' } }),
      412,
      '/problems/precondition-failed',
    );
    const deleted = await app.inject({ method: 'DELETE', url: `${base(accountId)}/mapping`, headers: { ...auth, 'if-match': '"1"' } });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ accountId, version: 2, deleted: true, author: 'admin', createdAt: expect.any(String) });
    // The sink and the dry-run see no mapping; the history shows the deletion.
    expect(stack.controlPlane.currentMapping(accountId)).toBeUndefined();
    const current = expectProblem(await app.inject({ method: 'GET', url: `${base(accountId)}/mapping`, headers: auth }), 404, '/problems/not-found');
    expect(current.detail).toMatch(/was deleted in version 2/);
    const versions = await app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions`, headers: auth });
    expect(versions.json().versions.map((v: { version: number; deleted?: boolean }) => [v.version, v.deleted ?? false])).toEqual([
      [2, true],
      [1, false],
    ]);
    expect((await app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions/2`, headers: auth })).json()).toMatchObject({
      version: 2,
      deleted: true,
      mapping: { crm: mapping.crm, rules: [] },
    });
    expectProblem(await app.inject({ method: 'DELETE', url: `${base(accountId)}/mapping`, headers: auth }), 404, '/problems/not-found');
    const again = await putMapping(accountId, mapping, { 'if-match': '"2"' });
    expect(again.statusCode).toBe(201);
    expect(again.json()).toMatchObject({ version: 3 });
    expect(stack.controlPlane.currentMapping(accountId)?.version).toBe(3);
  });

  it('deletes a credential with a tombstone, refusing while the current mapping uses it', async () => {
    const accountId = await newAccount();
    const hooks = { type: 'webhook', url: 'https://hooks.example.com/in', secret: 'whsec_delete_me' };
    expect((await app.inject({ method: 'PUT', url: `${base(accountId)}/credentials/hooks`, headers: auth, payload: hooks })).statusCode).toBe(200);
    expect((await putMapping(accountId, { ...mapping, crm: { type: 'webhook', credentialsRef: 'hooks' } })).statusCode).toBe(201);
    const inUse = expectProblem(await app.inject({ method: 'DELETE', url: `${base(accountId)}/credentials/hooks`, headers: auth }), 409, '/problems/conflict');
    expect(inUse.detail).toMatch(/mapping version 1 syncs with credential hooks/);
    expect((await app.inject({ method: 'DELETE', url: `${base(accountId)}/mapping`, headers: auth })).statusCode).toBe(200);
    const gone = await app.inject({ method: 'DELETE', url: `${base(accountId)}/credentials/hooks`, headers: auth });
    expect(gone.statusCode).toBe(200);
    expect(gone.json()).toEqual({ accountId, name: 'hooks', deleted: true });
    expect(stack.controlPlane.crmCredential(accountId, 'hooks')).toBeUndefined();
    expect((await app.inject({ method: 'GET', url: `${base(accountId)}/credentials`, headers: auth })).json()).toEqual({ credentials: [] });
    expectProblem(await app.inject({ method: 'DELETE', url: `${base(accountId)}/credentials/hooks`, headers: auth }), 404, '/problems/not-found');
  });
});

describe('CRM credentials admin API', () => {
  it('stores credentials and never returns or echoes their secrets', async () => {
    const accountId = await newAccount();
    const secrets = ['pat-na1-SECRET-1', 'whsec_SECRET_2', 'whsec_PREVIOUS_3'];
    const put = await app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/main`,
      headers: auth,
      payload: { type: 'hubspot', accessToken: secrets[0], baseUrl: 'https://hubspot.example.com:9999' },
    });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toEqual({ name: 'main', type: 'hubspot', baseUrl: 'https://hubspot.example.com:9999', updatedAt: expect.any(String) });
    await app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/hooks`,
      headers: auth,
      payload: { type: 'webhook', url: 'https://example.com/h', secret: secrets[1], previousSecret: secrets[2] },
    });

    const list = await app.inject({ method: 'GET', url: `${base(accountId)}/credentials`, headers: auth });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({
      credentials: [
        { name: 'hooks', type: 'webhook', url: 'https://example.com/h', signsWithPreviousSecret: true, updatedAt: expect.any(String) },
        { name: 'main', type: 'hubspot', baseUrl: 'https://hubspot.example.com:9999', updatedAt: expect.any(String) },
      ],
    });
    for (const s of secrets) expect(put.payload + list.payload).not.toContain(s);
    // The gateway's control plane holds the secret sealed; the sink's private key opens it.
    const stored = stack.controlPlane.crmCredential(accountId, 'main');
    expect(JSON.stringify(stored)).not.toContain(secrets[0]);
    expect(stored && testCredentialKeys().opener(stored)).toMatchObject({ accessToken: secrets[0] });
  });

  it.each([
    ['the cloud metadata service', 'http://169.254.169.254/latest/meta-data/', 'scheme_not_allowed'],
    ['the cloud metadata service over https', 'https://169.254.169.254/latest/meta-data/', 'address_not_allowed'],
    ['loopback', 'https://127.0.0.1:3102/metrics', 'address_not_allowed'],
    ['loopback by name', 'https://localhost/hook', 'address_not_allowed'],
    ['an RFC 1918 address', 'https://10.0.0.7/hook', 'address_not_allowed'],
    ['an IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook', 'address_not_allowed'],
    ['a unique-local IPv6 address', 'https://[fd00::1]/hook', 'address_not_allowed'],
    ['plain http', 'http://hooks.example.com/in', 'scheme_not_allowed'],
  ])('regression (SSRF): refuses a webhook URL pointing at %s with a 400 naming the reason, and stores nothing', async (_what, url, code) => {
    const accountId = await newAccount();
    const res = await app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/hooks`,
      headers: auth,
      payload: { type: 'webhook', url, secret: 'whsec_x' },
    });
    const body = expectProblem(res, 400, '/problems/validation-error');
    expect(body.detail).toMatch(/^The credential's url is refused by the outbound address policy: /);
    expect(body.errors).toEqual([{ field: '/url', code, message: expect.any(String) }]);
    expect(stack.controlPlane.crmCredential(accountId, 'hooks')).toBeUndefined();
  });

  it('checks baseUrl and instanceUrl too, listing the other errors of the credential with them', async () => {
    const accountId = await newAccount();
    const hubspot = await app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/main`,
      headers: auth,
      payload: { type: 'hubspot', accessToken: 't', baseUrl: 'https://192.168.1.10' },
    });
    expect(expectProblem(hubspot, 400, '/problems/validation-error').errors).toEqual([
      { field: '/baseUrl', code: 'address_not_allowed', message: expect.stringContaining('private (RFC 1918)') },
    ]);
    const salesforce = await app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/sf`,
      headers: auth,
      payload: { type: 'salesforce', instanceUrl: 'https://100.64.1.1' },
    });
    expect((expectProblem(salesforce, 400, '/problems/validation-error').errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/accessToken', 'required'],
      ['/instanceUrl', 'address_not_allowed'],
    ]);
  });

  it('lets an operator allow plain http and loopback (CRM_ALLOW_HTTP, CRM_ALLOWED_CIDRS) for a local fake CRM', async () => {
    const local = await stack.app('local-admin-token-0123456789abcdefghij', {
      outboundPolicy: createOutboundPolicy({ allowHttp: true, allowedCidrs: '127.0.0.1/32' }),
    });
    const accountId = await newAccount();
    const headers = { authorization: 'Bearer local-admin-token-0123456789abcdefghij' };
    const ok = await local.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/hooks`,
      headers,
      payload: { type: 'webhook', url: 'http://127.0.0.1:4000/webhook/a', secret: 'whsec_x' },
    });
    expect(ok.statusCode).toBe(200);
    const metadata = await local.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/meta`,
      headers,
      payload: { type: 'webhook', url: 'http://169.254.169.254/latest/meta-data/', secret: 'whsec_x' },
    });
    expectProblem(metadata, 400, '/problems/validation-error');
  });

  it('refuses an invalid credential with pointers, without echoing the secret', async () => {
    const accountId = await newAccount();
    const res = await app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/sf`,
      headers: auth,
      payload: { type: 'salesforce', accessToken: 'SECRET-SF', instanceUrl: 'not a url', password: 'x' },
    });
    const body = expectProblem(res, 400, '/problems/validation-error');
    expect((body.errors as { field: string }[]).map((e) => e.field).sort()).toEqual(['/instanceUrl', '/password']);
    expect(res.payload).not.toContain('SECRET-SF');
    expectProblem(
      await app.inject({ method: 'PUT', url: `${base(accountId)}/credentials/bad%2Fname`, headers: auth, payload: { type: 'hubspot', accessToken: 't' } }),
      400,
      '/problems/validation-error',
    );
  });

  it('regression: a body that is not an object (null, absent, an array item that is not an action) is a 400, not a 500', async () => {
    const accountId = await newAccount();
    const credentials = `${base(accountId)}/credentials/main`;
    const json = { ...auth, 'content-type': 'application/json' };
    expectProblem(await app.inject({ method: 'PUT', url: credentials, headers: auth }), 400, '/problems/validation-error');
    expectProblem(await app.inject({ method: 'PUT', url: credentials, headers: json, payload: 'null' }), 400, '/problems/validation-error');
    expectProblem(await app.inject({ method: 'PUT', url: `${base(accountId)}/mapping`, headers: json, payload: 'null' }), 400, '/problems/validation-error');
    await putMapping(accountId, mapping);
    const rule = { ...mapping.rules[1], actions: [[null, null], null] };
    const body = expectProblem(
      await app.inject({
        method: 'POST',
        url: `${base(accountId)}/mapping/dry-run`,
        headers: auth,
        payload: { event: { eventName: 'x', email: 'a@b.co' }, mapping: { ...mapping, rules: [rule] } },
      }),
      400,
      '/problems/validation-error',
    );
    expect((body.errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/mapping/rules/0/actions/0', 'invalid_type'],
      ['/mapping/rules/0/actions/1', 'invalid_type'],
    ]);
    expect(stack.controlPlane.listCrmCredentials(accountId)).toEqual([]);
  });

  it('answers 401 without the admin token', async () => {
    const accountId = await newAccount();
    for (const r of [
      { method: 'GET', url: `${base(accountId)}/credentials` },
      { method: 'GET', url: `${base(accountId)}/mapping` },
      { method: 'PUT', url: `${base(accountId)}/mapping`, payload: mapping },
    ] as const) {
      expectProblem(await app.inject({ ...r, headers: { authorization: 'Bearer wrong' } }), 401, '/problems/unauthorized');
    }
    expect(stack.controlPlane.mappingVersions(accountId)).toEqual([]);
  });
});

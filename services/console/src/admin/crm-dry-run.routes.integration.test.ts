/**
 * Real servers: Kafka (the control plane's compacted topics). The CRM dry-run: what the sink would plan and
 * call for a sample event.
 * The HTTP side runs in-process through fastify's inject (crm.routes.fixture.ts).
 */
import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { ledgerKey, planSync, recordStateKeys } from '@ingest/domain';
import { describe, expect, it } from 'vitest';
import { auth, base, expectProblem, mapping, useCrmRoutes } from './crm.routes.fixture.js';

const crm = useCrmRoutes();

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
    const accountId = await crm.newAccount();
    expectProblem(
      await crm.app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample } }),
      404,
      '/problems/not-found',
    );
    await crm.putMapping(accountId, mapping);
    const res = await crm.app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample } });
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
    const accountId = await crm.newAccount();
    const draft = { ...mapping, rules: [mapping.rules[0]] };
    const event = { ...sample, domain: undefined, properties: { plan: 'free' } };
    const res = await crm.app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event, mapping: draft } });
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
    const accountId = await crm.newAccount();
    await crm.putMapping(accountId, mapping);
    await crm.stack.controlPlane.putCrmCredential(accountId, 'main', {
      type: 'hubspot',
      accessToken: 'pat-secret-never-shown',
      baseUrl: 'http://crm.test/hub/',
    });
    const keys = recordStateKeys(crm.stack.redisKeyPrefix);
    // The sink has counted 4 signups and holds events and first_plan; it never held last_seen_at.
    const stateKey = keys.state(accountId, 'contact', 'ada@example.com');
    await crm.stack.redis.hset(stateKey, { 'n:signups': '4', 'l:events': '["Logged In"]', 'o:first_plan': '{"crm":1}' });
    const before = await crm.stack.redis.hgetall(stateKey);

    const res = await crm.app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample } });
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
      // The contact linked to its company (the mapping has rules for both): ids read, then the association.
      {
        method: 'POST',
        path: '/hub/crm/v3/objects/contacts/batch/read',
        body: { idProperty: 'email', properties: ['email'], inputs: [{ id: 'ada@example.com' }] },
      },
      {
        method: 'POST',
        path: '/hub/crm/v3/objects/companies/batch/read',
        body: { idProperty: 'domain', properties: ['domain'], inputs: [{ id: 'example.com' }] },
      },
      {
        method: 'POST',
        path: '/hub/crm/v4/associations/contacts/companies/batch/associate/default',
        body: { inputs: [{ from: { id: '<id of contact ada@example.com>' }, to: { id: '<id of company example.com>' } }] },
      },
    ]);
    expect(body.notes.map((n) => n.code)).toEqual(['crm_values_assumed_empty', 'record_id_placeholder', 'link_ids_looked_up']);
    expect(res.body).not.toContain('pat-secret-never-shown');
    // Nothing written: the state is as it was, no ledger or activity mark.
    expect(await crm.stack.redis.hgetall(stateKey)).toEqual(before);
    expect(await crm.stack.redis.exists(keys.ledger(ledger), keys.activity(ledger))).toBe(0);
  });

  it('says an event already applied is not applied again, and an activity already created is not created again', async () => {
    const accountId = await crm.newAccount();
    await crm.putMapping(accountId, mapping);
    await crm.stack.controlPlane.putCrmCredential(accountId, 'main', { type: 'hubspot', accessToken: 'pat-x', baseUrl: 'http://crm.test' });
    const keys = recordStateKeys(crm.stack.redisKeyPrefix);
    const ledger = ledgerKey(accountId, 'evt-1', 'signup');
    const at = String(Date.parse('2026-11-20T10:00:00Z'));
    await crm.stack.redis.hset(keys.state(accountId, 'contact', 'ada@example.com'), {
      'n:signups': '5',
      'n:last_seen_at': at,
      'l:events': '["Signed Up"]',
      'o:first_plan': '{"v":"pro"}',
    });
    await crm.stack.redis.set(keys.ledger(ledger), '1', 'EX', 600);
    await crm.stack.redis.set(keys.activity(ledger), '1', 'EX', 600);

    const res = await crm.app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample } });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { calls: { path: string; body: unknown }[]; notes: { code: string; ruleId?: string; fields?: string[] }[] };
    expect(body.calls.map((c) => c.path)).toEqual([
      '/crm/v3/objects/contacts/batch/upsert',
      '/crm/v3/objects/companies/batch/upsert',
      '/crm/v3/objects/contacts/batch/read',
      '/crm/v3/objects/companies/batch/read',
      '/crm/v4/associations/contacts/companies/batch/associate/default',
    ]);
    expect(body.calls[0]?.body).toEqual({
      inputs: [
        { id: 'ada@example.com', idProperty: 'email', properties: { plan: 'pro', first_plan: 'pro', signups: '5', last_seen_at: at, events: 'Signed Up' } },
      ],
    });
    expect(body.notes).toEqual([
      expect.objectContaining({ code: 'already_applied', ruleId: 'signup', fields: ['signups', 'last_seen_at', 'events', 'first_plan'] }),
      expect.objectContaining({ code: 'activity_already_created', ruleId: 'signup' }),
      // Linking again changes nothing, so it is shown (and made) every time.
      expect.objectContaining({ code: 'link_ids_looked_up', key: 'ada@example.com' }),
    ]);
  });

  it('shows Salesforce calls, and a field Salesforce would refuse as a note instead of a call', async () => {
    const accountId = await crm.newAccount();
    const sf = {
      version: 1,
      crm: { type: 'salesforce', credentialsRef: 'sf' },
      rules: [
        { id: 'contact', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'Plan__c', from: { property: 'plan' } }] },
        { id: 'company', when: { eventName: 'Signed Up' }, object: 'company', actions: [{ op: 'set', field: 'bad.name', from: { property: 'plan' } }] },
      ],
    } satisfies CrmMapping;
    await crm.stack.controlPlane.putCrmCredential(accountId, 'sf', {
      type: 'salesforce',
      accessToken: 'sf-secret',
      instanceUrl: 'https://acme.my.salesforce.com',
    });
    const res = await crm.app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample, mapping: sf } });
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
    const accountId = await crm.newAccount();
    await crm.stack.controlPlane.putCrmCredential(accountId, 'main', { type: 'webhook', url: 'http://hooks.test/in', secret: 'whsec_x' });
    const res = await crm.app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { event: sample, mapping } });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { crm: { credential: string }; calls: { path: string }[]; notes: { code: string }[] };
    expect(body.crm.credential).toBe('mismatch');
    expect(body.calls[0]?.path).toBe('/crm/v3/objects/contacts/batch/read');
    expect(body.notes[0]?.code).toBe('credential_mismatch');
  });

  it('refuses an invalid event and an invalid draft together, with pointers into the request', async () => {
    const accountId = await crm.newAccount();
    const payload = { event: { eventName: '', email: 'not-an-email' }, mapping: { ...mapping, crm: { type: 'hubspot' } } };
    const body = expectProblem(
      await crm.app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload }),
      400,
      '/problems/validation-error',
    );
    const fields = (body.errors as { field: string }[]).map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['/event/eventName', '/mapping/crm/credentialsRef']));
    expect(fields.every((f) => f.startsWith('/event/') || f.startsWith('/mapping/'))).toBe(true);
    const envelope = expectProblem(
      await crm.app.inject({ method: 'POST', url: `${base(accountId)}/mapping/dry-run`, headers: auth, payload: { evnt: {} } }),
      400,
      '/problems/validation-error',
    );
    expect((envelope.errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/event', 'required'],
      ['/evnt', 'unknown_field'],
    ]);
  });
});

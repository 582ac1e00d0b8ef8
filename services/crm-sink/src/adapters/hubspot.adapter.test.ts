// Servers: the fake CRM only (fastify on 127.0.0.1), over real HTTP.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { CrmError, type RecordWrite } from './adapter.js';
import { createHubSpotAdapter, hubspotBatchFailures } from './hubspot.adapter.js';
import { buildHubSpotUpsertRequests } from '@ingest/domain';

const TOKEN = 'hs-token-account-a';
const OTHER = 'hs-token-account-b';
let crm: FakeCrm;
let hubspot: ReturnType<typeof createHubSpotAdapter>;

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [TOKEN, OTHER] });
  hubspot = createHubSpotAdapter({ type: 'hubspot', accessToken: TOKEN, baseUrl: crm.url }, { headersTimeoutMs: 500, outboundPolicy: FAKE_CRM_OUTBOUND });
});
afterAll(async () => {
  await hubspot.close();
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

describe('HubSpot adapter', () => {
  it('upserts contacts by email with string values and reads them back', async () => {
    const result = await hubspot.upsert('contact', [
      contact('ada@example.com', { plan: 'pro', seats: 3, trial: true, churned_at: null }),
      contact('bob@example.com', { plan: 'free' }),
    ]);
    expect(result.failures).toEqual([]);
    expect(crm.records('hubspot', 'contacts').get('ada@example.com')?.properties).toMatchObject({
      email: 'ada@example.com',
      plan: 'pro',
      seats: '3',
      trial: 'true',
      churned_at: '',
    });
    expect(crm.calls).toMatchObject([
      { crm: 'hubspot', method: 'POST', path: '/crm/v3/objects/contacts/batch/upsert', token: TOKEN, batchSize: 2, status: 200 },
    ]);

    const read = await hubspot.read('contact', ['ada@example.com', 'nobody@example.com'], ['plan', 'seats', 'unset']);
    expect([...read]).toEqual([['ada@example.com', { plan: 'pro', seats: '3', unset: null }]]);
  });

  it('upserts companies by domain, updating in place', async () => {
    await hubspot.upsert('company', [{ object: 'company', key: 'acme.com', properties: { tier: 'gold' } }]);
    await hubspot.upsert('company', [{ object: 'company', key: 'acme.com', properties: { tier: 'platinum', seats: 10 } }]);
    const companies = crm.records('hubspot', 'companies');
    expect(companies.size).toBe(1);
    expect(companies.get('acme.com')?.properties).toMatchObject({ domain: 'acme.com', tier: 'platinum', seats: '10' });
  });

  it('sends exactly the requests its pure builder describes (dry-run = real)', async () => {
    const records = [contact('ada@example.com', { plan: 'pro' }), contact('ada@example.com', { seats: 2 })];
    await hubspot.upsert('contact', records);
    const planned = buildHubSpotUpsertRequests('contact', records);
    expect(crm.calls.map(({ method, path, body }) => ({ method, path, body }))).toEqual(planned);
    // Two writes of one key merge into one input: HubSpot refuses duplicate ids in a batch.
    expect(planned[0]?.body).toEqual({ inputs: [{ id: 'ada@example.com', idProperty: 'email', properties: { plan: 'pro', seats: '2' } }] });
  });

  it('reports the records refused in a 207 multi-status answer and writes the rest', async () => {
    const result = await hubspot.upsert('contact', [contact('ada@example.com', { plan: 'pro' }), contact('not-an-email', { plan: 'pro' })]);
    expect(result.failures).toEqual([{ key: 'not-an-email', message: expect.stringContaining('VALIDATION_ERROR') as string }]);
    expect(crm.calls[0]?.status).toBe(207);
    expect(crm.records('hubspot', 'contacts').has('ada@example.com')).toBe(true);
  });

  it('refuses a batch over maxBatchSize without calling HubSpot', async () => {
    const records = Array.from({ length: 101 }, (_, i) => contact(`u${i}@example.com`, {}));
    await expect(hubspot.upsert('contact', records)).rejects.toThrow(/exceeds the limit of 100/);
    await expect(hubspot.upsert('contact', records.slice(0, 100))).resolves.toEqual({ failures: [] });
    expect(crm.calls.map((c) => c.batchSize)).toEqual([100]);
  });

  it('classifies 429 with Retry-After in seconds as rate_limited', async () => {
    crm.failNext({ status: 429, retryAfterSeconds: 2 });
    const err = await crmError(hubspot.upsert('contact', [contact('ada@example.com', {})]));
    expect(err).toMatchObject({ kind: 'rate_limited', status: 429, retryAfterMs: 2000 });
  });

  it('classifies 429 with Retry-After as an HTTP-date as rate_limited with the remaining wait', async () => {
    crm.failNext({ status: 429, retryAfter: new Date(Date.now() + 30_000).toUTCString() });
    const err = await crmError(hubspot.upsert('contact', [contact('ada@example.com', {})]));
    expect(err.kind).toBe('rate_limited');
    expect(err.retryAfterMs).toBeGreaterThan(20_000);
    expect(err.retryAfterMs).toBeLessThanOrEqual(30_000);
  });

  it("answers the fake's own per-token rate limit with 429 and a Retry-After, for that token only", async () => {
    const limited = await startFakeCrm({ tokens: [TOKEN, OTHER], rateLimits: { hubspot: { max: 2, windowMs: 60_000 } } });
    const a = createHubSpotAdapter({ type: 'hubspot', accessToken: TOKEN, baseUrl: limited.url }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    const b = createHubSpotAdapter({ type: 'hubspot', accessToken: OTHER, baseUrl: limited.url }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await a.read('contact', ['ada@example.com'], []);
      await a.read('contact', ['ada@example.com'], []);
      const err = await crmError(a.read('contact', ['ada@example.com'], []));
      expect(err.kind).toBe('rate_limited');
      expect(err.retryAfterMs).toBeGreaterThan(0);
      expect(err.retryAfterMs).toBeLessThanOrEqual(60_000);
      await expect(b.read('contact', ['ada@example.com'], [])).resolves.toBeInstanceOf(Map);
    } finally {
      await a.close();
      await b.close();
      await limited.stop();
    }
  });

  it('classifies 503 as transient, and recovers on the next call', async () => {
    crm.failNext({ status: 503, times: 2 });
    expect((await crmError(hubspot.upsert('contact', [contact('ada@example.com', {})]))).kind).toBe('transient');
    expect((await crmError(hubspot.upsert('contact', [contact('ada@example.com', {})]))).kind).toBe('transient');
    await expect(hubspot.upsert('contact', [contact('ada@example.com', {})])).resolves.toEqual({ failures: [] });
  });

  it('classifies a response slower than the headers timeout as transient', async () => {
    crm.failNext({ delayMs: 1_500 });
    const err = await crmError(hubspot.upsert('contact', [contact('ada@example.com', {})]));
    expect(err.kind).toBe('transient');
    expect(err.message).toMatch(/UND_ERR_HEADERS_TIMEOUT/);
  });

  it('reports every call to onCall with its status, including calls that got no answer', async () => {
    const observed: { crm: string; method: string; status: number }[] = [];
    const adapter = createHubSpotAdapter(
      { type: 'hubspot', accessToken: TOKEN, baseUrl: crm.url },
      { outboundPolicy: FAKE_CRM_OUTBOUND, onCall: ({ crm: name, method, status }) => observed.push({ crm: name, method, status }) },
    );
    try {
      crm.failNext({ status: 503 });
      await adapter.upsert('contact', [contact('ada@example.com', {})]).catch(() => undefined);
      await adapter.upsert('contact', [contact('ada@example.com', {})]);
      expect(observed).toEqual([
        { crm: 'HubSpot', method: 'POST', status: 503 },
        { crm: 'HubSpot', method: 'POST', status: 200 },
      ]);
    } finally {
      await adapter.close();
    }
  });

  it('classifies a refused connection as transient', async () => {
    const down = await startFakeCrm();
    const url = down.url;
    await down.stop();
    const adapter = createHubSpotAdapter({ type: 'hubspot', accessToken: TOKEN, baseUrl: url }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      const err = await crmError(adapter.upsert('contact', [contact('ada@example.com', {})]));
      expect(err.kind).toBe('transient');
      expect(err.message).toMatch(/ECONNREFUSED/);
    } finally {
      await adapter.close();
    }
  });

  it('classifies a wrong token as auth, without the token in the message', async () => {
    const secret = 'hs-wrong-token-that-must-not-leak';
    const adapter = createHubSpotAdapter({ type: 'hubspot', accessToken: secret, baseUrl: crm.url }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      const err = await crmError(adapter.upsert('contact', [contact('ada@example.com', {})]));
      expect(err).toMatchObject({ kind: 'auth', status: 401 });
      expect(err.message).toContain('INVALID_AUTHENTICATION');
      expect(err.message).not.toContain(secret);
    } finally {
      await adapter.close();
    }
  });

  it("classifies other 4xx as permanent with HubSpot's message", async () => {
    crm.failNext({ status: 400 });
    const err = await crmError(hubspot.upsert('contact', [contact('ada@example.com', {})]));
    expect(err).toMatchObject({ kind: 'permanent', status: 400 });
    expect(err.message).toBe('HubSpot answered 400: VALIDATION_ERROR: Injected failure 400');
  });

  it('scopes injected faults to one token (= one account)', async () => {
    crm.failNext({ status: 503, token: OTHER });
    await expect(hubspot.upsert('contact', [contact('ada@example.com', {})])).resolves.toEqual({ failures: [] });
  });

  it('creates a note per activity key once, associated with its contact, even when sent twice', async () => {
    const activity = {
      object: 'contact' as const,
      key: 'ada@example.com',
      type: 'signup',
      title: 'Signed up <pro>',
      occurredAt: '2026-01-02T03:04:05.000Z',
      idempotencyKey: 'crm:acc:ev1:r1',
    };
    await expect(hubspot.createActivities([activity])).resolves.toEqual({ failures: [] });
    const other = { ...activity, idempotencyKey: 'crm:acc:ev2:r1' };
    // The second batch holds the first key again (a redelivery) next to a new one: HubSpot answers 409.
    await expect(hubspot.createActivities([activity, other])).resolves.toEqual({ failures: [] });
    const notes = crm.records('hubspot', 'notes');
    expect([...notes.keys()].sort()).toEqual(['crm:acc:ev1:r1', 'crm:acc:ev2:r1']);
    const contactId = crm.records('hubspot', 'contacts').get('ada@example.com')?.id;
    expect(notes.get('crm:acc:ev1:r1')).toMatchObject({
      associations: [contactId],
      properties: { hs_timestamp: activity.occurredAt, hs_note_body: '<strong>signup</strong>: Signed up &lt;pro&gt;' },
    });
    // The refused batch is followed by a read of its keys and a create of the missing note only.
    expect(crm.calls.filter((c) => c.path.includes('/notes/')).map((c) => `${c.path.split('/').pop()} ${c.status}`)).toEqual([
      'create 201',
      'create 409',
      'read 207',
      'create 201',
    ]);
  });

  // Regression: after a crash between creating a batch of notes and marking them, the redone
  // batch of 100 met a 409 and fell back to one request per note: 102 requests, more than
  // HubSpot's 100 per 10 s, so the 101st got a 429 and every retry started over (no progress).
  it("redoes a full batch of notes that already exist within HubSpot's 100 requests per 10 s", async () => {
    const activities = Array.from({ length: 100 }, (_, i) => ({
      object: 'contact' as const,
      key: `u${i % 7}@example.com`,
      type: 'feature',
      title: `Used ${i}`,
      occurredAt: '2026-01-02T03:04:05.000Z',
      idempotencyKey: `crm:acc:ev${i}:feature`,
    }));
    await expect(hubspot.createActivities(activities.slice(0, 60))).resolves.toEqual({ failures: [] });
    const before = crm.calls.length;
    await expect(hubspot.createActivities(activities)).resolves.toEqual({ failures: [] });
    await expect(hubspot.createActivities(activities)).resolves.toEqual({ failures: [] });
    expect([...crm.records('hubspot', 'notes').keys()].sort()).toEqual(activities.map((a) => a.idempotencyKey).sort());
    expect(crm.calls.length - before).toBeLessThanOrEqual(8);
  });

  it('associates company activities with the company and reports activities whose record HubSpot refuses', async () => {
    const base = { type: 'note', title: 'Renewed', occurredAt: '2026-01-02T03:04:05.000Z' };
    const result = await hubspot.createActivities([
      { ...base, object: 'company', key: 'acme.com', idempotencyKey: 'k-company' },
      { ...base, object: 'contact', key: 'broken', idempotencyKey: 'k-broken' },
    ]);
    expect(result.failures).toEqual([{ key: 'k-broken', message: expect.stringContaining('invalid') as string }]);
    const companyId = crm.records('hubspot', 'companies').get('acme.com')?.id;
    expect(crm.records('hubspot', 'notes').get('k-company')?.associations).toEqual([companyId]);
    expect(crm.records('hubspot', 'notes').has('k-broken')).toBe(false);
  });

  it('fails every unconfirmed record when a 207 error names none, and only the named ones otherwise', () => {
    const keys = ['ada@example.com', 'bob@example.com', 'cy@example.com'];
    const results = [{ id: '1', properties: { email: 'ADA@example.com' } }];
    expect(hubspotBatchFailures(keys, 'email', { results, errors: [{ category: 'VALIDATION_ERROR', message: 'bad' }] })).toEqual([
      { key: 'bob@example.com', message: 'VALIDATION_ERROR: bad' },
      { key: 'cy@example.com', message: 'VALIDATION_ERROR: bad' },
    ]);
    expect(hubspotBatchFailures(keys, 'email', { results, errors: [{ message: 'bad', context: { ids: ['CY@example.com'] } }] })).toEqual([
      { key: 'cy@example.com', message: 'bad' },
    ]);
    expect(hubspotBatchFailures(keys, 'email', { results })).toEqual([]);
  });
});

/**
 * Real servers (Kafka control plane, Redis, ClickHouse) through the real console app, crm-sink's
 * connection channel in-process on the same control plane, and the fake HubSpot over HTTP. A
 * mapping is saved only when its fields fit the CRM's properties; a CRM that answers slowly or
 * with garbage leaves it unsaved with the reason, unless the owner saves without checking.
 */
import { type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { type ChannelConsole, type DashboardUser, type GatewayFixture, signedInOwner, startChannelConsole } from '@ingest/testkit/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const TOKEN = 'tok-mapping-check';
let gw: GatewayFixture;
let crm: FakeCrm;
let stack: ChannelConsole | undefined;
let owner: { accountId: string; user: DashboardUser };
const json = { 'content-type': 'application/json' };

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [TOKEN] });
  stack = await startChannelConsole({ label: 'mapcheck', env: { CRM_SINK_INTERNAL_TIMEOUT_MS: '8000' }, channelTimeoutMs: 1_500 });
  gw = stack.gw;
  const { account } = await gw.newAccount('pro');
  owner = { accountId: account.id, user: await signedInOwner(gw, account.id) };
  const added = await owner.user.request({
    method: 'POST',
    url: '/dashboard/api/connections',
    payload: { name: 'hs', credential: { type: 'hubspot', accessToken: TOKEN, baseUrl: crm.url } },
    headers: json,
  });
  expect(added.statusCode).toBe(201);
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await crm?.stop();
});

const mapping = (field: string) => ({
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hs' },
  rules: [
    {
      id: 'signup',
      when: { eventName: 'Signed Up' },
      object: 'contact',
      actions: [
        { op: 'set', field: 'plan', from: { property: 'plan' } },
        { op: 'increment', field },
      ],
    },
  ],
});
const put = (body: unknown, query = '') => owner.user.request({ method: 'PUT', url: `/dashboard/api/mapping${query}`, payload: body as object, headers: json });
const propertyReads = () => crm.calls.filter((c) => c.path.startsWith('/crm/v3/properties/contacts')).length;
const current = async () => (await owner.user.request({ method: 'GET', url: '/dashboard/api/mapping' })).json().current;

describe('a mapping checked against the CRM', () => {
  it('refuses an unknown field and a read-only one, naming rule and field, and stores nothing', async () => {
    const unknown = await put(mapping('signupz'));
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json()).toMatchObject({
      type: '/problems/validation-error',
      errors: [{ field: '/rules/0/actions/1/field', code: 'unknown_crm_field', message: 'rule "signup": contact field "signupz" does not exist in hubspot' }],
    });
    const readOnly = await put(mapping('hs_object_id'));
    expect(readOnly.json().errors).toEqual([expect.objectContaining({ code: 'read_only_field', field: '/rules/0/actions/1/field' })]);
    const wrongType = await put(mapping('firstname'));
    expect(wrongType.json().errors).toEqual([expect.objectContaining({ code: 'incompatible_type', field: '/rules/0/actions/1/op' })]);
    expect(await current()).toBeNull();
  });

  it('saves a mapping that fits, reading the properties once per credential version (cached)', async () => {
    const before = propertyReads();
    expect((await put(mapping('signup_count'))).statusCode).toBe(201);
    expect((await put(mapping('signup_count'))).statusCode).toBe(201);
    // The first test read them already: the saves here were answered from the cache.
    expect(propertyReads()).toBe(before);
    expect((await current()).version).toBe(2);
  });

  it('refuses a draft with an unknown field in the dry-run too', async () => {
    const dry = await owner.user.request({
      method: 'POST',
      url: '/dashboard/api/mapping/dry-run',
      payload: { event: { eventName: 'Signed Up', email: 'a@example.com' }, mapping: mapping('nope') },
      headers: json,
    });
    expect(dry.statusCode).toBe(400);
    expect(dry.json().errors).toEqual([expect.objectContaining({ field: '/mapping/rules/0/actions/1/field', code: 'unknown_crm_field' })]);
  });

  it('leaves the mapping unsaved with the reason when the CRM answers slowly or with garbage; "save without checking" stores it, audited', async () => {
    // Rotating the secret gives the credential a new version: the cached lists no longer apply.
    const rotate = () =>
      owner.user.request({
        method: 'PUT',
        url: '/dashboard/api/connections/hs',
        payload: { type: 'hubspot', accessToken: TOKEN, baseUrl: crm.url },
        headers: json,
      });
    expect((await rotate()).statusCode).toBe(200);
    crm.failNext({ path: '/crm/v3/properties', delayMs: 3_000 });
    const slow = await put(mapping('signup_count'));
    expect(slow.statusCode).toBeGreaterThanOrEqual(500);
    expect(slow.json().detail).toMatch(/^The mapping was not checked against the CRM, so it was not saved: /);

    expect((await rotate()).statusCode).toBe(200);
    crm.failNext({ path: '/crm/v3/properties', bodyBytes: 4_096 });
    const garbage = await put(mapping('signup_count'));
    expect(garbage.statusCode).toBeGreaterThanOrEqual(500);
    expect(garbage.json().detail).toMatch(/not saved/);
    expect((await current()).version).toBe(2);

    const unchecked = await put(mapping('anything_goes'), '?check=skip');
    expect(unchecked.statusCode).toBe(201);
    type Audit = { action: string; accountId: string; after?: { version?: number; checkedAgainstCrm?: boolean } };
    const mine = (values: Audit[]) => values.filter((r) => r.accountId === owner.accountId && r.action === 'mapping.put' && r.after?.version === 3);
    const { values } = await gw.readTopic<Audit>('auditLog', (v) => mine(v).length >= 1, 'the audit record of the unchecked save');
    expect(mine(values)[0]?.after).toEqual({ version: 3, checkedAgainstCrm: false });
  });
});

/**
 * Real servers (Kafka control plane, Redis, ClickHouse) through the real console app, crm-sink's
 * connection channel in-process on the same control plane, and the fake HubSpot over HTTP. The
 * Connections page's API: the session's account only, CSRF on writes, secrets write-only,
 * every change audited, and "test connection" answered by crm-sink in plain words.
 */
import { type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { type ChannelConsole, type DashboardUser, type GatewayFixture, signedInOwner, startChannelConsole } from '@ingest/testkit/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const GOOD = 'tok-connections-good';
let gw: GatewayFixture;
let crm: FakeCrm;
let stack: ChannelConsole | undefined;
let a: { accountId: string; user: DashboardUser };
let b: { accountId: string; user: DashboardUser };
const json = { 'content-type': 'application/json' };

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [GOOD] });
  stack = await startChannelConsole({ label: 'conn', env: { CRM_SINK_INTERNAL_TIMEOUT_MS: '8000' } });
  gw = stack.gw;
  const setUp = async () => {
    const { account } = await gw.newAccount('pro');
    return { accountId: account.id, user: await signedInOwner(gw, account.id) };
  };
  a = await setUp();
  b = await setUp();
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await crm?.stop();
});

const hubspot = (token: string) => ({ type: 'hubspot', accessToken: token, baseUrl: crm.url });

describe('the Connections API', () => {
  it('adds a credential without ever showing its secret, tests it, rotates it and tests the new secret', async () => {
    const added = await a.user.request({
      method: 'POST',
      url: '/dashboard/api/connections',
      payload: { name: 'hs', credential: hubspot(GOOD) },
      headers: json,
    });
    expect(added.statusCode).toBe(201);
    expect(added.body).not.toContain(GOOD);
    expect(added.json()).toMatchObject({ name: 'hs', type: 'hubspot', baseUrl: crm.url });

    const list = await a.user.request({ method: 'GET', url: '/dashboard/api/connections' });
    expect(list.json()).toMatchObject({ checksAvailable: true, connections: [{ name: 'hs', type: 'hubspot', usedByMapping: false }] });
    expect(list.body).not.toContain(GOOD);

    const ok = await a.user.request({ method: 'POST', url: '/dashboard/api/connections/hs/test' });
    expect(ok.json()).toMatchObject({ ok: true, outcome: 'connected', message: 'HubSpot accepted the token (200).' });

    // Rotating to a revoked token: the very next test uses the new secret (crm-sink waits for the record).
    const rotated = await a.user.request({ method: 'PUT', url: '/dashboard/api/connections/hs', payload: hubspot('tok-revoked'), headers: json });
    expect(rotated.statusCode).toBe(200);
    const refused = await a.user.request({ method: 'POST', url: '/dashboard/api/connections/hs/test' });
    expect(refused.json()).toMatchObject({ ok: false, outcome: 'refused', status: 401 });
    expect(refused.json().message).toMatch(/^HubSpot refused the token \(401\): expired or revoked/);

    // The audit log (topic audit.log): both changes, by the owner, with views only.
    type Audit = { action: string; accountId: string; target: string; actor?: unknown };
    const mine = (values: Audit[]) => values.filter((r) => r.accountId === a.accountId && r.target === 'hs');
    const { values } = await gw.readTopic<Audit>('auditLog', (v) => mine(v).length >= 2, 'two audit records of hs');
    expect(mine(values).map((r) => r.action)).toEqual(['crm_credential.put', 'crm_credential.put']);
    expect(JSON.stringify(values)).not.toContain('tok-revoked');
  });

  it('reads object properties through crm-sink', async () => {
    await a.user.request({ method: 'PUT', url: '/dashboard/api/connections/hs', payload: hubspot(GOOD), headers: json });
    const props = await a.user.request({ method: 'GET', url: '/dashboard/api/connections/hs/properties?object=company' });
    expect(props.statusCode).toBe(200);
    expect(props.json()).toMatchObject({ v: 1, crm: 'hubspot', object: 'company' });
    expect(props.json().properties.map((p: { name: string }) => p.name)).toEqual(['domain', 'name', 'hs_object_id']);
  });

  it("keeps another account's connections out of reach", async () => {
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/connections' })).json().connections).toEqual([]);
    expect((await b.user.request({ method: 'POST', url: '/dashboard/api/connections/hs/test' })).statusCode).toBe(404);
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/connections/hs/properties?object=contact' })).statusCode).toBe(404);
    expect((await b.user.request({ method: 'PUT', url: '/dashboard/api/connections/hs', payload: hubspot('x'), headers: json })).statusCode).toBe(404);
    expect((await b.user.request({ method: 'DELETE', url: '/dashboard/api/connections/hs' })).statusCode).toBe(404);
    expect(gw.controlPlane.crmCredential(a.accountId, 'hs')).toBeDefined();
  });

  it('refuses writes without CSRF, an existing name, a refused address, and removing what the mapping uses', async () => {
    const post = (payload: Record<string, unknown>, headers: Record<string, string | undefined> = {}) =>
      b.user.request({ method: 'POST', url: '/dashboard/api/connections', payload, headers: { ...json, ...headers } });
    expect((await post({ name: 'x', credential: hubspot(GOOD) }, { 'x-csrf-token': undefined })).statusCode).toBe(403);
    expect((await post({ name: 'meta', credential: { type: 'webhook', url: 'http://169.254.169.254/latest', secret: 's' } })).statusCode).toBe(400);
    expect(
      (await post({ name: 'hook', credential: { type: 'webhook', url: `${crm.url}/webhook/b`, secret: 'whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0' } }))
        .statusCode,
    ).toBe(201);
    const again = await post({ name: 'hook', credential: hubspot(GOOD) });
    expect(again.statusCode).toBe(409);

    const mapping = {
      version: 1,
      crm: { type: 'webhook', credentialsRef: 'hook' },
      rules: [{ id: 'r', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'plan', from: { property: 'plan' } }] }],
    };
    expect((await b.user.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: mapping, headers: json })).statusCode).toBe(201);
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/connections' })).json().connections[0]).toMatchObject({
      name: 'hook',
      usedByMapping: true,
    });
    const inUse = await b.user.request({ method: 'DELETE', url: '/dashboard/api/connections/hook' });
    expect(inUse.statusCode).toBe(409);
    expect(inUse.json().detail).toContain('mapping uses hook');

    expect((await b.user.request({ method: 'DELETE', url: '/dashboard/api/mapping' })).statusCode).toBe(200);
    expect((await b.user.request({ method: 'DELETE', url: '/dashboard/api/connections/hook' })).statusCode).toBe(200);
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/connections' })).json().connections).toEqual([]);
  });
});

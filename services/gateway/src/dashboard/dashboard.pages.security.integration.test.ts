/**
 * Real servers (Kafka control plane, Redis, ClickHouse) through the real gateway app: the CRM
 * mapping and event debugger APIs of the dashboard take the account from the session only,
 * refuse writes without CSRF protection and answer bad input with a precise 4xx.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type GatewayFixture } from '../test-support/gateway.fixture.js';
import { type DashboardUser, signedInOwner } from '../test-support/dashboard.client.js';

let gw: GatewayFixture;
let a: { accountId: string; apiKey: string; user: DashboardUser };
let b: { accountId: string; apiKey: string; user: DashboardUser };

const mappingDoc = (field: string) => ({
  version: 1,
  crm: { type: 'webhook', credentialsRef: 'hook' },
  rules: [{ id: 'signed-up', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field, from: { property: 'plan' } }] }],
});

beforeAll(async () => {
  gw = await createGatewayFixture();
  const setUp = async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    return { accountId: account.id, apiKey, user: await signedInOwner(gw, account.id) };
  };
  a = await setUp();
  b = await setUp();
});

afterAll(async () => {
  await gw?.close();
});

const json = { 'content-type': 'application/json' };

describe('CRM mapping API', () => {
  it("stores the session account's mapping with the owner as author; the other account sees none of it", async () => {
    const saved = await a.user.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: mappingDoc('plan_a'), headers: json });
    expect(saved.statusCode).toBe(201);
    expect(saved.headers.etag).toBe('"1"');
    expect(saved.json()).toMatchObject({ accountId: a.accountId, version: 1, author: `owner:${a.user.email}` });

    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/mapping' })).json()).toEqual({ current: null });
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions' })).json()).toEqual({ versions: [] });
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions/1' })).statusCode).toBe(404);
    // b's dry-run without a draft has no mapping to use: a's is never taken.
    const dry = await b.user.request({
      method: 'POST',
      url: '/dashboard/api/mapping/dry-run',
      payload: { event: { eventName: 'Signed Up', email: 'x@example.com' } },
      headers: json,
    });
    expect(dry.statusCode).toBe(404);

    const mine = (await a.user.request({ method: 'GET', url: '/dashboard/api/mapping' })).json();
    expect(mine.current).toMatchObject({ version: 1, mapping: mappingDoc('plan_a') });
  });

  it('refuses a save without the CSRF token or from a foreign origin, and stores nothing', async () => {
    const put = (headers: Record<string, string | undefined>) =>
      b.user.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: mappingDoc('plan_b'), headers: { ...json, ...headers } });
    expect((await put({ 'x-csrf-token': undefined })).statusCode).toBe(403);
    expect((await put({ 'x-csrf-token': a.user.csrfToken })).statusCode).toBe(403);
    expect((await put({ origin: 'https://evil.example' })).statusCode).toBe(403);
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions' })).json()).toEqual({ versions: [] });
  });

  it('answers an invalid document with every error as a JSON Pointer, a stale If-Match with 412, a bad one with 400', async () => {
    const bad = await a.user.request({
      method: 'PUT',
      url: '/dashboard/api/mapping',
      payload: { ...mappingDoc('plan'), rules: [{ id: 'Bad Id', object: 'person', actions: [] }] },
      headers: { ...json, 'if-match': '"1"' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toContain('application/problem+json');
    const fields = (bad.json().errors as { field: string }[]).map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['/rules/0/id', '/rules/0/object']));

    const notJson = await a.user.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: '{"version":', headers: json });
    expect(notJson.statusCode).toBe(400);

    const v2 = await a.user.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: mappingDoc('plan_2'), headers: { ...json, 'if-match': '"1"' } });
    expect(v2.statusCode).toBe(201);
    const stale = await a.user.request({
      method: 'PUT',
      url: '/dashboard/api/mapping',
      payload: mappingDoc('plan_3'),
      headers: { ...json, 'if-match': '"1"' },
    });
    expect(stale.statusCode).toBe(412);
    expect(stale.json()).toMatchObject({ currentVersion: 2 });
    const malformed = await a.user.request({
      method: 'PUT',
      url: '/dashboard/api/mapping',
      payload: mappingDoc('plan_3'),
      headers: { ...json, 'if-match': 'yesterday' },
    });
    expect(malformed.statusCode).toBe(400);
    expect((await a.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions/abc' })).statusCode).toBe(400);

    const versions = (await a.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions' })).json().versions;
    expect(versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);
  });

  it('dry-runs an event with the current version or a draft; errors point into the event and the draft', async () => {
    const event = { eventName: 'Signed Up', email: 'ada@example.com', properties: { plan: 'pro' } };
    const current = await a.user.request({ method: 'POST', url: '/dashboard/api/mapping/dry-run', payload: { event }, headers: json });
    expect(current.statusCode).toBe(200);
    expect(current.json()).toMatchObject({
      mappingVersion: 2,
      operations: [{ ruleId: 'signed-up', set: { plan_2: 'pro' } }],
      rules: [{ ruleId: 'signed-up', matched: true }],
    });

    const bad = await a.user.request({
      method: 'POST',
      url: '/dashboard/api/mapping/dry-run',
      payload: { event: { email: 'ada@example.com' }, mapping: { ...mappingDoc('x'), version: 2 } },
      headers: json,
    });
    expect(bad.statusCode).toBe(400);
    const fields = (bad.json().errors as { field: string }[]).map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['/event/eventName', '/mapping/version']));
  });

  it('refuses the API without a session', async () => {
    const anonymous = await gw.app.inject({ method: 'GET', url: '/dashboard/api/mapping', headers: { host: 'dashboard.test' } });
    expect(anonymous.statusCode).toBe(401);
  });
});

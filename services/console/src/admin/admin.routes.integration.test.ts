/**
 * Real servers: Kafka (the control plane's compacted topics, from the local stack or a
 * container; see scripts/test). The HTTP side runs in-process through fastify's inject.
 */
import { hashApiKey } from '@ingest/domain';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminTestStack, startAdminTestStack } from '@ingest/testkit/gateway';

const TOKEN = 'admin-secret-token-for-the-admin-route-tests';
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

function expectProblem(res: LightMyRequestResponse, status: number): Record<string, unknown> {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ status, type: expect.stringMatching(/^\/problems\//), title: expect.any(String), detail: expect.any(String) });
  expect(body.requestId).toEqual(expect.any(String));
  expect(body.requestId).not.toBe('');
  return body;
}

async function createAccount(name = 'Acme', plan = 'free'): Promise<{ id: string }> {
  const res = await app.inject({ method: 'POST', url: '/admin/v1/accounts', headers: auth, payload: { name, plan } });
  expect(res.statusCode).toBe(201);
  return res.json();
}

describe('admin API authentication', () => {
  it.each([
    ['no authorization header', {}],
    ['a wrong token', { authorization: 'Bearer not-the-token' }],
    ['a token with a different length', { authorization: `Bearer ${TOKEN}x` }],
    ['another scheme', { authorization: `Basic ${TOKEN}` }],
  ])('answers 401 problem+json to %s', async (_case, headers) => {
    const res = await app.inject({ method: 'GET', url: '/admin/v1/accounts', headers });
    const body = expectProblem(res, 401);
    expect(body.type).toBe('/problems/unauthorized');
    expect(res.headers['www-authenticate']).toBe('Bearer realm="admin"');
  });

  it('refuses writes without the token and changes nothing', async () => {
    const before = stack.controlPlane.listAccounts().length;
    const res = await app.inject({
      method: 'POST',
      url: '/admin/v1/accounts',
      headers: { authorization: 'Bearer nope' },
      payload: { name: 'X', plan: 'free' },
    });
    expectProblem(res, 401);
    expect(stack.controlPlane.listAccounts()).toHaveLength(before);
  });

  it('answers 404 on every admin route when the admin token is empty (admin API disabled)', async () => {
    const disabled = await stack.app('');
    const account = await createAccount('Exists');
    const requests = [
      { method: 'POST', url: '/admin/v1/accounts', payload: { name: 'X', plan: 'free' } },
      { method: 'GET', url: '/admin/v1/accounts' },
      { method: 'GET', url: `/admin/v1/accounts/${account.id}` },
      { method: 'PUT', url: `/admin/v1/accounts/${account.id}/plan`, payload: { plan: 'pro' } },
      { method: 'POST', url: `/admin/v1/accounts/${account.id}/keys`, payload: {} },
      { method: 'GET', url: `/admin/v1/accounts/${account.id}/keys` },
      { method: 'POST', url: `/admin/v1/accounts/${account.id}/keys/key_x/revoke` },
    ] as const;
    for (const r of requests) {
      // An empty bearer token must not open a disabled API either.
      const res = await disabled.inject({ ...r, headers: { authorization: 'Bearer ' } });
      expectProblem(res, 404);
    }
    expect(stack.controlPlane.accountById(account.id)?.plan).toBe('free');
  });
});

describe('admin API validation', () => {
  it('answers 400 with a JSON pointer for a bad plan', async () => {
    const res = await app.inject({ method: 'POST', url: '/admin/v1/accounts', headers: auth, payload: { name: 'Acme', plan: 'platinum' } });
    const body = expectProblem(res, 400);
    expect(body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: '/plan' })]));
  });

  it('answers 400 for an unknown body key', async () => {
    const res = await app.inject({ method: 'POST', url: '/admin/v1/accounts', headers: auth, payload: { name: 'Acme', plan: 'free', owner: 'x' } });
    const body = expectProblem(res, 400);
    expect(body.errors).toEqual([expect.objectContaining({ field: '/owner', code: 'unknown_field' })]);
  });

  it('answers 400 for a missing or blank name', async () => {
    const missing = expectProblem(await app.inject({ method: 'POST', url: '/admin/v1/accounts', headers: auth, payload: { plan: 'free' } }), 400);
    expect(missing.errors).toEqual([expect.objectContaining({ field: '/name', code: 'required' })]);
    const blank = expectProblem(await app.inject({ method: 'POST', url: '/admin/v1/accounts', headers: auth, payload: { name: '   ', plan: 'free' } }), 400);
    expect(blank.errors).toEqual([expect.objectContaining({ field: '/name' })]);
  });

  it('answers 400 for a bad plan on PUT /plan and leaves the plan alone', async () => {
    const account = await createAccount();
    const res = await app.inject({ method: 'PUT', url: `/admin/v1/accounts/${account.id}/plan`, headers: auth, payload: { plan: 'enterprise' } });
    const body = expectProblem(res, 400);
    expect(body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field: '/plan' })]));
    expect(stack.controlPlane.accountById(account.id)?.plan).toBe('free');
  });

  it('answers 404 for an unknown account on every account route', async () => {
    const id = 'acc_doesnotexist000000';
    const requests = [
      { method: 'GET', url: `/admin/v1/accounts/${id}` },
      { method: 'PUT', url: `/admin/v1/accounts/${id}/plan`, payload: { plan: 'pro' } },
      { method: 'POST', url: `/admin/v1/accounts/${id}/keys`, payload: { name: 'k' } },
      { method: 'GET', url: `/admin/v1/accounts/${id}/keys` },
      { method: 'POST', url: `/admin/v1/accounts/${id}/keys/key_x/revoke` },
    ] as const;
    for (const r of requests) {
      const body = expectProblem(await app.inject({ ...r, headers: auth }), 404);
      expect(body.type).toBe('/problems/not-found');
    }
  });

  it("answers 404 when revoking another account's key, and the key stays valid", async () => {
    const owner = await createAccount('Owner');
    const other = await createAccount('Other');
    const created = await app.inject({ method: 'POST', url: `/admin/v1/accounts/${owner.id}/keys`, headers: auth, payload: {} });
    const { key } = created.json();
    expectProblem(await app.inject({ method: 'POST', url: `/admin/v1/accounts/${other.id}/keys/${key.id}/revoke`, headers: auth }), 404);
    expect(stack.controlPlane.listApiKeys(owner.id)[0]?.revokedAt).toBeNull();
  });
});

describe('admin API flow', () => {
  it('creates an account, changes its plan, creates, lists and revokes a key', async () => {
    const created = await app.inject({ method: 'POST', url: '/admin/v1/accounts', headers: auth, payload: { name: '  Flow Corp ', plan: 'free' } });
    expect(created.statusCode).toBe(201);
    const account = created.json();
    expect(account).toEqual({
      id: expect.stringMatching(/^acc_[0-9A-Za-z]{20}$/),
      name: 'Flow Corp',
      plan: 'free',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const listed = await app.inject({ method: 'GET', url: '/admin/v1/accounts', headers: auth });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().accounts).toContainEqual(account);

    const shown = await app.inject({ method: 'GET', url: `/admin/v1/accounts/${account.id}`, headers: auth });
    expect(shown.json()).toEqual(account);

    const planned = await app.inject({ method: 'PUT', url: `/admin/v1/accounts/${account.id}/plan`, headers: auth, payload: { plan: 'growth' } });
    expect(planned.statusCode).toBe(200);
    expect(planned.json()).toMatchObject({ id: account.id, plan: 'growth' });

    const keyRes = await app.inject({ method: 'POST', url: `/admin/v1/accounts/${account.id}/keys`, headers: auth, payload: { name: 'server' } });
    expect(keyRes.statusCode).toBe(201);
    const { apiKey, key } = keyRes.json();
    expect(apiKey).toMatch(/^svc_live_[0-9A-Za-z]{43}$/);
    expect(key).toEqual({
      id: expect.stringMatching(/^key_/),
      accountId: account.id,
      name: 'server',
      prefix: apiKey.slice(0, 15),
      createdAt: expect.any(String),
      revokedAt: null,
      // New keys default to sending events and reading usage (reading events back is opt-in).
      scopes: ['events:write', 'usage:read'],
      type: 'secret',
    });
    expect(stack.controlPlane.apiKeyByHash(hashApiKey(apiKey))?.id).toBe(key.id);

    const defaultName = await app.inject({ method: 'POST', url: `/admin/v1/accounts/${account.id}/keys`, headers: auth });
    expect(defaultName.statusCode).toBe(201);
    expect(defaultName.json().key.name).toBe('default');

    const keys = await app.inject({ method: 'GET', url: `/admin/v1/accounts/${account.id}/keys`, headers: auth });
    expect(keys.statusCode).toBe(200);
    expect(keys.json().keys.map((k: { id: string }) => k.id)).toEqual([key.id, defaultName.json().key.id]);
    expect(keys.body).not.toContain(apiKey);
    expect(keys.body).not.toContain(hashApiKey(apiKey));
    expect(keys.body).not.toContain('"hash"');

    const revoked = await app.inject({ method: 'POST', url: `/admin/v1/accounts/${account.id}/keys/${key.id}/revoke`, headers: auth });
    expect(revoked.statusCode).toBe(200);
    const revokedKey = revoked.json();
    expect(revokedKey).toMatchObject({ id: key.id, revokedAt: expect.any(String) });
    expect(revokedKey).not.toHaveProperty('hash');
    expect(stack.controlPlane.apiKeyByHash(hashApiKey(apiKey))?.revokedAt).toBe(revokedKey.revokedAt);

    const again = await app.inject({ method: 'POST', url: `/admin/v1/accounts/${account.id}/keys/${key.id}/revoke`, headers: auth });
    expect(again.json()).toEqual(revokedKey);
  });
});

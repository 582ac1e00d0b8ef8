/**
 * Real servers: Kafka (control plane, audit topic), Redis, ClickHouse, through the real admin
 * app. Named admins: each role may do what docs/access-control.md says and no more; tokens of
 * the environment and of named admins rotate with two valid at once; revoked ones are refused.
 */
import { type AdminTestStack, randomClientIp, startAdminTestStack } from '@ingest/testkit/gateway';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const TOKEN = 'admins-test-current-token-0123456789abcdef';
const OLD_TOKEN = 'admins-test-previous-token-0123456789abcdef';

let stack: AdminTestStack;
let app: FastifyInstance;

beforeAll(async () => {
  stack = await startAdminTestStack();
  app = await stack.app(TOKEN, { env: { ADMIN_TOKEN_PREVIOUS: OLD_TOKEN } });
});

afterAll(async () => {
  await stack?.close();
});

const call = (token: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object) =>
  app.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
    ...(payload ? { payload } : {}),
    remoteAddress: randomClientIp(),
  });

async function newAdmin(name: string, role: 'operator' | 'admin'): Promise<{ token: string; id: string }> {
  const created = await call(TOKEN, 'POST', '/admins', { name, role });
  expect(created.statusCode, created.body).toBe(201);
  const body = created.json<{ token: string; admin: { id: string; name: string; role: string; prefix: string } }>();
  expect(body.token).toMatch(/^adm_[0-9A-Za-z]{43}$/);
  expect(body.admin).toMatchObject({ name, role, prefix: body.token.slice(0, 10) });
  return { token: body.token, id: body.admin.id };
}

describe('named admins', () => {
  it('takes ADMIN_TOKEN and ADMIN_TOKEN_PREVIOUS (a rotation of the environment token), and nothing else', async () => {
    expect((await call(TOKEN, 'GET', '/accounts')).statusCode).toBe(200);
    expect((await call(OLD_TOKEN, 'GET', '/accounts')).statusCode).toBe(200);
    expect((await call(`${TOKEN}x`, 'GET', '/accounts')).statusCode).toBe(401);
  });

  it('lets an operator read, suspend and resume, and refuses every other change with 403 admin_role', async () => {
    const operator = await newAdmin('ops-ada', 'operator');
    const account = (await call(TOKEN, 'POST', '/accounts', { name: 'Role test', plan: 'free' })).json<{ id: string }>();
    const allowed = [
      ['GET', '/accounts'],
      ['GET', `/accounts/${account.id}`],
      ['GET', `/accounts/${account.id}/keys`],
      ['GET', `/accounts/${account.id}/owners`],
      ['GET', '/audit'],
      ['POST', `/accounts/${account.id}/suspend`, { reason: 'operator test' }],
      ['POST', `/accounts/${account.id}/resume`, {}],
    ] as const;
    for (const [method, url, payload] of allowed) {
      const response = await call(operator.token, method, url, payload);
      expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(300);
    }
    const refused = [
      ['POST', '/accounts', { name: 'x', plan: 'free' }],
      ['PUT', `/accounts/${account.id}/plan`, { plan: 'pro' }],
      ['POST', `/accounts/${account.id}/keys`, { name: 'x' }],
      ['POST', `/accounts/${account.id}/owners`, { email: 'x@example.com' }],
      ['PUT', `/accounts/${account.id}/allowed-origins`, { origins: [] }],
      ['PUT', `/accounts/${account.id}/crm/credentials/hub`, { type: 'hubspot', accessToken: 'pat-x' }],
      ['GET', '/admins'],
      ['POST', '/admins', { name: 'sneaky', role: 'admin' }],
    ] as const;
    for (const [method, url, payload] of refused) {
      const response = await call(operator.token, method, url, payload);
      expect(response.statusCode, `${method} ${url}`).toBe(403);
      expect(response.json()).toMatchObject({ type: '/problems/forbidden', code: 'admin_role', role: 'admin' });
    }
    // Nothing of it happened.
    expect((await call(TOKEN, 'GET', `/accounts/${account.id}`)).json()).toMatchObject({ plan: 'free' });
    expect((await call(TOKEN, 'GET', `/accounts/${account.id}/keys`)).json()).toEqual({ keys: [] });
  });

  it('lets a named admin do everything, and lists credentials without their tokens', async () => {
    const boss = await newAdmin('boss', 'admin');
    const created = await call(boss.token, 'POST', '/accounts', { name: 'By boss', plan: 'free' });
    expect(created.statusCode).toBe(201);
    expect((await call(boss.token, 'PUT', `/accounts/${created.json<{ id: string }>().id}/plan`, { plan: 'pro' })).statusCode).toBe(200);
    const listed = await call(boss.token, 'GET', '/admins');
    expect(listed.statusCode).toBe(200);
    const { admins } = listed.json<{ admins: { id: string; name: string; source: string }[] }>();
    expect(admins.filter((a) => a.source === 'environment').map((a) => a.id)).toEqual(['env:ADMIN_TOKEN', 'env:ADMIN_TOKEN_PREVIOUS']);
    expect(admins.map((a) => a.name)).toContain('boss');
    expect(listed.body).not.toContain(boss.token);
    expect(listed.body).not.toMatch(/"hash"/);
  });

  it('rotates a named token: two valid at once, then the old one is refused once revoked', async () => {
    const first = await newAdmin('rotating', 'operator');
    const second = await newAdmin('rotating', 'operator');
    expect((await call(first.token, 'GET', '/accounts')).statusCode).toBe(200);
    expect((await call(second.token, 'GET', '/accounts')).statusCode).toBe(200);
    // An operator may not revoke (admin role), and no credential revokes itself.
    expect((await call(second.token, 'POST', `/admins/${first.id}/revoke`)).statusCode).toBe(403);
    const boss = await newAdmin('boss-2', 'admin');
    expect((await call(boss.token, 'POST', `/admins/${boss.id}/revoke`)).statusCode).toBe(409);
    const revoked = await call(boss.token, 'POST', `/admins/${first.id}/revoke`);
    expect(revoked.statusCode, revoked.body).toBe(200);
    expect(revoked.json()).toMatchObject({ id: first.id, revokedAt: expect.any(String) });
    expect((await call(first.token, 'GET', '/accounts')).statusCode).toBe(401);
    expect((await call(second.token, 'GET', '/accounts')).statusCode).toBe(200);
    expect((await call(TOKEN, 'POST', '/admins/adm_unknown/revoke')).statusCode).toBe(404);
  });

  it('refuses a bad name or role with 400', async () => {
    for (const body of [{ name: 'Upper Case', role: 'admin' }, { name: 'ok', role: 'root' }, { name: 'ok' }]) {
      expect((await call(TOKEN, 'POST', '/admins', body)).statusCode).toBe(400);
    }
  });
});

/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture: the console's dashboard and admin
 * apps as main.ts builds them). Issue 26, item 8: every answer that carries a secret or a token
 * (a new API key, a new admin credential, the CSRF token of a session) is `Cache-Control:
 * no-store`, so no browser, proxy or CDN cache keeps a copy; the whole dashboard API and the
 * whole admin API are, so a new route cannot forget it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createGatewayFixture, createOwner, type GatewayFixture, randomClientIp, signedInOwner, signInRequest } from '@ingest/testkit/gateway';

let gw: GatewayFixture;

beforeAll(async () => {
  gw = await createGatewayFixture();
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

const admin = (method: 'GET' | 'POST', url: string, payload?: object) =>
  gw.admin.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
    ...(payload ? { payload } : {}),
    remoteAddress: randomClientIp(),
  });

describe('Cache-Control: no-store', () => {
  it('on the dashboard: sign-in and the session (the CSRF token), a new API key, and its refusals', async () => {
    const { account } = await gw.newAccount();
    const { email, password } = await createOwner(gw, account.id);
    const signIn = await signInRequest(gw.console, email, password);
    expect(signIn.statusCode, signIn.body).toBe(200);
    expect(signIn.json().csrfToken).toEqual(expect.any(String));
    expect(signIn.headers['cache-control']).toBe('no-store');

    const owner = await signedInOwner(gw, account.id);
    const session = await owner.request({ method: 'GET', url: '/dashboard/api/session' });
    expect(session.json().csrfToken).toEqual(expect.any(String));
    expect(session.headers['cache-control']).toBe('no-store');

    const created = await owner.request({ method: 'POST', url: '/dashboard/api/keys', payload: { name: 'cache test' } });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().apiKey).toMatch(/^svc_live_/);
    expect(created.headers['cache-control']).toBe('no-store');

    const refused = await owner.request({ method: 'POST', url: '/dashboard/api/keys', payload: { name: 'no csrf' }, headers: { 'x-csrf-token': undefined } });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['cache-control']).toBe('no-store');
  });

  it('on the admin API: a new API key, a new admin credential, and every other answer', async () => {
    const account = await admin('POST', '/accounts', { name: 'No Store Co', plan: 'pro' });
    expect(account.headers['cache-control']).toBe('no-store');
    const key = await admin('POST', `/accounts/${account.json().id}/keys`, { name: 'server' });
    expect(key.statusCode, key.body).toBe(201);
    expect(key.json().apiKey).toMatch(/^svc_live_/);
    expect(key.headers['cache-control']).toBe('no-store');

    const credential = await admin('POST', '/admins', { name: `ops-${Date.now()}`, role: 'operator' });
    expect(credential.statusCode, credential.body).toBe(201);
    expect(credential.json().token).toEqual(expect.any(String));
    expect(credential.headers['cache-control']).toBe('no-store');

    const unauthorized = await gw.admin.inject({ method: 'GET', url: '/admin/v1/accounts', remoteAddress: randomClientIp() });
    expect(unauthorized.statusCode).toBe(401);
    expect(unauthorized.headers['cache-control']).toBe('no-store');
  });
});

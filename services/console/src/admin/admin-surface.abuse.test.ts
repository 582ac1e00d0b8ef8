/**
 * Real servers: Kafka, Redis, ClickHouse; the gateway's public API, the console's dashboard and
 * its admin API each on a loopback port of its own, as the two main.ts start them. The admin
 * surface is not public: neither the public listener nor the dashboard's routes or documents /admin/v1 (the 12 admin paths used to be listed in
 * /v1/openapi.json and /docs), and the admin listener serves the admin API and its own
 * document, and nothing of the public API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConsoleConfig } from '../config.js';
import { ADMIN_TOKEN, createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { ADMIN_OPENAPI_PATH } from './admin.app.js';

let gw: GatewayFixture;
let publicUrl: string;
let dashboardUrl: string;
let adminUrl: string;

beforeAll(async () => {
  gw = await createGatewayFixture();
  publicUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  dashboardUrl = await gw.console.listen({ host: '127.0.0.1', port: 0 });
  adminUrl = await gw.admin.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await gw?.close();
});

const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };

async function paths(url: string, headers: Record<string, string> = {}): Promise<string[]> {
  const res = await fetch(url, { headers: { 'x-forwarded-for': randomClientIp(), ...headers } });
  expect(res.status, url).toBe(200);
  return Object.keys(((await res.json()) as { paths: Record<string, unknown> }).paths);
}

describe('admin surface', () => {
  it('is neither documented nor routed on the public listener, whatever the token', async () => {
    for (const doc of [`${publicUrl}/v1/openapi.json`, `${publicUrl}/docs/json`]) {
      const listed = await paths(doc);
      expect(listed.filter((p) => p.startsWith('/admin'))).toEqual([]);
      expect(listed).toContain('/v1/events');
    }
    const refused = await fetch(`${publicUrl}/admin/v1/accounts`, { method: 'POST', headers: adminHeaders, body: JSON.stringify({ name: 'x', plan: 'pro' }) });
    expect(refused.status).toBe(404);
    expect(await fetch(`${publicUrl}${ADMIN_OPENAPI_PATH}`).then((r) => r.status)).toBe(404);
  });

  it("is not routed on the console's dashboard listener either, whatever the token", async () => {
    const refused = await fetch(`${dashboardUrl}/admin/v1/accounts`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ name: 'x', plan: 'pro' }),
    });
    expect(refused.status).toBe(404);
    expect(await fetch(`${dashboardUrl}${ADMIN_OPENAPI_PATH}`).then((r) => r.status)).toBe(404);
  });

  it('is served with its own document on the admin listener, which serves nothing public', async () => {
    const listed = await paths(`${adminUrl}${ADMIN_OPENAPI_PATH}`, { authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(listed.length).toBeGreaterThanOrEqual(12);
    expect(listed.every((p) => p.startsWith('/admin/v1/'))).toBe(true);
    expect(listed).toEqual(expect.arrayContaining(['/admin/v1/accounts', '/admin/v1/accounts/{accountId}/keys']));

    const created = await fetch(`${adminUrl}/admin/v1/accounts`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ name: 'Surface Co', plan: 'pro' }),
    });
    expect(created.status).toBe(201);
    const wrongToken = await fetch(`${adminUrl}/admin/v1/accounts`, { headers: { authorization: 'Bearer not-the-token' } });
    expect(wrongToken.status).toBe(401);
    expect(await fetch(`${adminUrl}/v1/usage`, { headers: { authorization: 'Bearer svc_live_x' } }).then((r) => r.status)).toBe(404);
  });

  it('listens on loopback port 3200 unless told otherwise', () => {
    expect(loadConsoleConfig({})).toMatchObject({ ADMIN_HOST: '127.0.0.1', ADMIN_PORT: 3200 });
  });

  it('serves its OpenAPI document to admins only (issue 26): 401 without the token or with a wrong one, and no browsable UI', async () => {
    for (const headers of [{}, { authorization: 'Bearer not-the-admin-token-0123456789abcdef' }]) {
      const refused = await fetch(`${adminUrl}${ADMIN_OPENAPI_PATH}`, { headers: { 'x-forwarded-for': randomClientIp(), ...headers } });
      expect(refused.status).toBe(401);
      expect(refused.headers.get('content-type')).toContain('application/problem+json');
      expect(refused.headers.get('www-authenticate')).toBe('Bearer realm="admin"');
      expect(await refused.text()).not.toContain('/admin/v1/accounts');
    }
    for (const ui of ['/admin/docs', '/admin/docs/', '/admin/docs/json']) {
      const res = await fetch(`${adminUrl}${ui}`, { headers: { 'x-forwarded-for': randomClientIp(), authorization: `Bearer ${ADMIN_TOKEN}` } });
      expect(res.status, ui).toBe(404);
    }
  });
});

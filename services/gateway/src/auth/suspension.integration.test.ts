/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture) and a second gateway replica with
 * its own control plane. A suspension made through the admin API reaches both gateways within
 * the revocation bound (5 s): every public route answers 403 account_suspended, the dashboard
 * turns read-only; a resume undoes both.
 */
import { waitFor } from '@ingest/testkit';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createGatewayFixture, csvMultipart, type GatewayFixture, randomClientIp, signedInOwner } from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let replica: FastifyInstance;

const REASON = 'chargeback #4711 under review';
const admin = (url: string, payload?: object) =>
  gw.admin.inject({
    method: 'POST',
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
    ...(payload ? { payload } : {}),
    remoteAddress: randomClientIp(),
  });

function publicRequests(apiKey: string) {
  const auth = { authorization: `Bearer ${apiKey}` };
  const json = { ...auth, 'content-type': 'application/json' };
  const csv = csvMultipart('event_name,timestamp,email\nsuspended,2024-01-01T00:00:00Z,ada@example.com\n');
  const events = { events: [{ eventName: 'suspended', email: 'ada@example.com' }] };
  return [
    { method: 'POST' as const, url: '/v1/events', headers: json, payload: events },
    { method: 'POST' as const, url: '/v1/events/bulk', headers: json, payload: events },
    { method: 'POST' as const, url: '/v1/backfill/csv', headers: { ...auth, 'content-type': csv.contentType }, payload: csv.body },
    { method: 'GET' as const, url: '/v1/jobs/job_unknown', headers: auth },
    { method: 'GET' as const, url: '/v1/events/evt-unknown', headers: auth },
    { method: 'GET' as const, url: '/v1/usage', headers: auth },
  ];
}

const send = (app: FastifyInstance, apiKey: string) =>
  app.inject({
    method: 'POST',
    url: '/v1/events',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    payload: { events: [{ eventName: 'x', email: 'a@example.com' }] },
    remoteAddress: randomClientIp(),
  });

beforeAll(async () => {
  gw = await createGatewayFixture();
  replica = await gw.replica();
}, 60_000);

afterAll(async () => {
  await gw?.close();
});

describe('account suspension', () => {
  it('refuses every public route on both gateways within 5 s, keeps the dashboard read-only, and a resume restores both', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const owner = await signedInOwner(gw, account.id);
    expect((await send(gw.app, apiKey)).statusCode).toBe(202);
    expect((await send(replica, apiKey)).statusCode).toBe(202);

    const suspended = await admin(`/accounts/${account.id}/suspend`, { reason: REASON });
    expect(suspended.statusCode, suspended.body).toBe(200);
    expect(suspended.json()).toMatchObject({ id: account.id, suspension: { reason: REASON, suspendedAt: expect.any(String) } });

    const startedAt = Date.now();
    for (const app of [gw.app, replica]) {
      await waitFor(async () => ((await send(app, apiKey)).statusCode === 403 ? true : undefined), {
        description: 'the suspension seen by the gateway',
        timeoutMs: 5_000,
      });
    }
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    for (const app of [gw.app, replica]) {
      for (const request of publicRequests(apiKey)) {
        const response = await app.inject({ ...request, remoteAddress: randomClientIp() });
        expect(response.statusCode, `${request.method} ${request.url}: ${response.body}`).toBe(403);
        expect(response.headers['content-type']).toContain('application/problem+json');
        expect(response.json()).toMatchObject({ type: '/problems/account-suspended', code: 'account_suspended' });
        // The operator's reason is for the record, not for callers.
        expect(response.body).not.toContain('chargeback');
      }
    }

    // The dashboard: reads work, changes are refused (a new key would undo the suspension).
    expect((await owner.request({ method: 'GET', url: '/dashboard/api/keys' })).statusCode).toBe(200);
    const newKey = await owner.request({
      method: 'POST',
      url: '/dashboard/api/keys',
      headers: { 'content-type': 'application/json' },
      payload: { name: 'escape' },
    });
    expect(newKey.statusCode, newKey.body).toBe(403);
    expect(newKey.json()).toMatchObject({ code: 'account_suspended' });
    const mapping = await owner.request({ method: 'DELETE', url: '/dashboard/api/mapping' });
    expect(mapping.statusCode, mapping.body).toBe(403);
    expect(gw.controlPlane.listApiKeys(account.id)).toHaveLength(1);

    const resumed = await admin(`/accounts/${account.id}/resume`, { reason: 'resolved' });
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json()).not.toHaveProperty('suspension');
    for (const app of [gw.app, replica]) {
      await waitFor(async () => ((await send(app, apiKey)).statusCode === 202 ? true : undefined), {
        description: 'the resume seen by the gateway',
        timeoutMs: 5_000,
      });
    }
    const afterResume = await owner.request({
      method: 'POST',
      url: '/dashboard/api/keys',
      headers: { 'content-type': 'application/json' },
      payload: { name: 'after' },
    });
    expect(afterResume.statusCode, afterResume.body).toBe(201);
  });

  it('keeps the reason in the compacted control.accounts record', async () => {
    const { account } = await gw.newAccount('free');
    expect((await admin(`/accounts/${account.id}/suspend`, { reason: REASON })).statusCode).toBe(200);
    // Idempotent: a second suspension keeps the first reason and time.
    const again = await admin(`/accounts/${account.id}/suspend`, { reason: 'another' });
    expect(again.json().suspension.reason).toBe(REASON);
    const { values } = await gw.readTopic<{ id: string; suspension?: { reason: string } }>(
      'controlAccounts',
      (records) => records.some((r) => r.id === account.id && r.suspension?.reason === REASON),
      'the suspended account record',
    );
    expect(values.filter((r) => r.id === account.id && r.suspension)).toHaveLength(1);
  });

  it('answers 400 for a missing or too long reason and 404 for an unknown account', async () => {
    const { account } = await gw.newAccount('free');
    for (const payload of [{}, { reason: '' }, { reason: 'x'.repeat(501) }, { reason: 'ok', extra: 1 }]) {
      const response = await admin(`/accounts/${account.id}/suspend`, payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(400);
    }
    expect((await admin('/accounts/acc_doesnotexist/suspend', { reason: 'x' })).statusCode).toBe(404);
    expect((await admin('/accounts/acc_doesnotexist/resume')).statusCode).toBe(404);
    expect(gw.controlPlane.accountById(account.id)?.suspension).toBeUndefined();
  });
});

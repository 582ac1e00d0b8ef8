/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture) and the real processor in this
 * process (dedupe, storage). Issue 26, item 5: a publishable key is public, so whoever copies it
 * must not be able to claim an eventId or an Idempotency-Key before the account's own server.
 * - the same eventId through a publishable and then a secret key is two stored events (`pk:id`
 *   and `id`), counted twice; read-back by the id finds the secret key's, then the browser's;
 * - with the account's `publishableEventIds: shared` it is one event;
 * - a publishable key cannot start a bulk job, so it cannot take an Idempotency-Key first.
 */
import type { Component } from '@ingest/platform';
import { sql } from '@ingest/platform';
import { waitFor } from '@ingest/testkit';
import { ADMIN_TOKEN, createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let gw: GatewayFixture;
let parts: Component[] = [];

const admin = (method: 'POST' | 'PUT', url: string, payload: object) =>
  gw.admin.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    payload,
    remoteAddress: randomClientIp(),
  });

const call = (key: string, method: 'GET' | 'POST', url: string, payload?: object, headers: Record<string, string> = {}) =>
  gw.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${key}`, ...(payload ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(payload ? { payload } : {}),
    remoteAddress: randomClientIp(),
  });

/** An account with a publishable key and a secret key (every scope). */
async function accountWithKeys(): Promise<{ accountId: string; secret: string; publishable: string }> {
  const { account, apiKey } = await gw.newAccount('pro');
  const created = await admin('POST', `/accounts/${account.id}/keys`, { name: 'browser', type: 'publishable' });
  expect(created.statusCode, created.body).toBe(201);
  const publishable = created.json().apiKey as string;
  await waitFor(() => gw.controlPlane.listApiKeys(account.id).length === 2, { description: 'both keys in the control plane', timeoutMs: 10_000 });
  return { accountId: account.id, secret: apiKey, publishable };
}

/** The stored event ids of an account once `expected` of them are there (after merging copies). */
async function storedIds(accountId: string, expected: number): Promise<string[]> {
  return waitFor(
    async () => {
      const rows = await gw.clickhouse.ch.query<{ event_id: string }>(sql`SELECT event_id FROM events FINAL WHERE account_id = ${accountId} ORDER BY event_id`);
      const ids = rows.map((r) => r.event_id);
      if (ids.length < expected) throw new Error(`stored so far: ${JSON.stringify(ids)}`);
      return ids;
    },
    { description: `${expected} stored events of ${accountId}`, timeoutMs: 30_000 },
  );
}

beforeAll(async () => {
  gw = await createGatewayFixture();
  parts = await startProcessorFor(gw, `publishable-ids-${Date.now()}`);
}, 90_000);

afterAll(async () => {
  for (const part of [...parts].reverse()) await part.stop();
  await gw?.close();
});

describe('eventIds sent through a publishable key', () => {
  it('are a namespace of their own by default: the same id through both keys is two stored, counted events', async () => {
    const { accountId, secret, publishable } = await accountWithKeys();
    const sent = await call(publishable, 'POST', '/v1/events', { events: [{ eventName: 'Claimed', eventId: 'order-1', email: 'eve@example.com' }] });
    expect(sent.statusCode, sent.body).toBe(202);
    // The browser is answered the id it sent.
    expect(sent.json().eventIds).toEqual(['order-1']);
    const own = await call(secret, 'POST', '/v1/events', { events: [{ eventName: 'Paid', eventId: 'order-1', email: 'ada@example.com' }] });
    expect(own.statusCode, own.body).toBe(202);

    expect(await storedIds(accountId, 2)).toEqual(['order-1', 'pk:order-1']);
    // Both were counted: the server's event was not taken for a repeat of the browser's.
    expect((await call(secret, 'GET', '/v1/usage')).json()).toMatchObject({ used: 2 });

    // Read-back by the id finds the server's event; the browser's is `pk:order-1`.
    const mine = await call(secret, 'GET', '/v1/events/order-1');
    expect(mine.json()).toMatchObject({ eventId: 'order-1', eventName: 'Paid' });
    const browsers = await call(secret, 'GET', '/v1/events/pk:order-1');
    expect(browsers.json()).toMatchObject({ eventId: 'pk:order-1', eventName: 'Claimed' });
  }, 60_000);

  it('are found by the id the browser sent when no secret key sent it', async () => {
    const { accountId, secret, publishable } = await accountWithKeys();
    expect((await call(publishable, 'POST', '/v1/events', { events: [{ eventName: 'Viewed', eventId: 'view-9', domain: 'example.com' }] })).statusCode).toBe(
      202,
    );
    await storedIds(accountId, 1);
    expect((await call(secret, 'GET', '/v1/events/view-9')).json()).toMatchObject({ eventId: 'pk:view-9', eventName: 'Viewed' });
  }, 60_000);

  it("share the secret keys' space when the account says so: the same id is then one event", async () => {
    const { accountId, secret, publishable } = await accountWithKeys();
    const set = await admin('PUT', `/accounts/${accountId}/publishable-event-ids`, { mode: 'shared' });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toMatchObject({ publishableEventIds: 'shared' });
    await waitFor(() => gw.controlPlane.accountById(accountId)?.publishableEventIds === 'shared', {
      description: 'the setting in the control plane',
      timeoutMs: 10_000,
    });

    expect((await call(publishable, 'POST', '/v1/events', { events: [{ eventName: 'Signed Up', eventId: 'user-7', domain: 'example.com' }] })).statusCode).toBe(
      202,
    );
    expect((await call(secret, 'POST', '/v1/events', { events: [{ eventName: 'Signed Up', eventId: 'user-7', domain: 'example.com' }] })).statusCode).toBe(202);
    // A later event of the secret key: once it is stored, both user-7 copies have passed dedupe.
    expect((await call(secret, 'POST', '/v1/events', { events: [{ eventName: 'Marker', eventId: 'zz-marker', domain: 'example.com' }] })).statusCode).toBe(202);
    expect(await storedIds(accountId, 2)).toEqual(['user-7', 'zz-marker']);
    expect((await call(secret, 'GET', '/v1/usage')).json()).toMatchObject({ used: 2 });

    // And back to separate (the default): stored as absent.
    const back = await admin('PUT', `/accounts/${accountId}/publishable-event-ids`, { mode: 'separate' });
    expect(back.json().publishableEventIds).toBeUndefined();
  }, 60_000);

  it('refuses an id longer than 252 characters in the namespace, per event, and takes the rest', async () => {
    const { publishable } = await accountWithKeys();
    const response = await call(publishable, 'POST', '/v1/events', {
      events: [
        { eventName: 'Long', eventId: 'x'.repeat(253), domain: 'example.com' },
        { eventName: 'Short', eventId: 'x'.repeat(252), domain: 'example.com' },
      ],
    });
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json()).toMatchObject({ accepted: 1, rejected: 1, errors: [{ index: 0, field: '/events/0/eventId', code: 'too_long' }] });
  });
});

describe('Idempotency-Key and publishable keys', () => {
  it("a copied publishable key cannot claim a key first: its bulk request is refused and the server's own request creates its job", async () => {
    const { secret, publishable } = await accountWithKeys();
    const body = { events: [{ eventName: 'Imported', eventId: 'imp-1', domain: 'example.com' }] };
    const stolen = await call(publishable, 'POST', '/v1/events/bulk', body, { 'idempotency-key': 'nightly-2026-11-27' });
    expect(stolen.statusCode, stolen.body).toBe(403);
    expect(stolen.json()).toMatchObject({ type: '/problems/forbidden', code: 'publishable_key' });

    // The attacker's body differs from the server's: had the key been claimed, this would be a 422.
    const first = await call(
      secret,
      'POST',
      '/v1/events/bulk',
      { events: [{ eventName: 'Imported', eventId: 'imp-2', domain: 'example.com' }] },
      { 'idempotency-key': 'nightly-2026-11-27' },
    );
    expect(first.statusCode, first.body).toBe(202);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
  });
});

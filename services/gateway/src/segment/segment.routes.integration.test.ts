/**
 * Real servers: Kafka and Redis (and the control plane on Kafka). The Segment-compatible routes
 * as a client sees them, through the gateway app: HTTP Basic and body keys (a bad one is the same
 * 401 as a bad Bearer key), Segment's answer, its size limits, publishable keys only on the
 * browser calls, a userId-only message accepted, and refused messages in the dead letters.
 */
import { allowancePeriod } from '@ingest/domain';
import { waitFor } from '@ingest/testkit';
import { ADMIN_TOKEN, type EventRecord, randomClientIp, signedInOwner, useGatewayFixture } from '@ingest/testkit/gateway';
import { beforeAll, describe, expect, it } from 'vitest';

const gw = useGatewayFixture();
let accountId: string;
let secret: string;
let publishable: string;
const ORIGIN = 'https://shop.example';

const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`;

beforeAll(async () => {
  const created = await gw.newAccount('pro');
  accountId = created.account.id;
  secret = created.apiKey;
  const admin = (method: 'POST' | 'PUT', url: string, payload: object) =>
    gw.admin.inject({ method, url: `/admin/v1${url}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` }, payload, remoteAddress: randomClientIp() });
  expect((await admin('PUT', `/accounts/${accountId}/allowed-origins`, { origins: [ORIGIN] })).statusCode).toBe(200);
  const key = await admin('POST', `/accounts/${accountId}/keys`, { name: 'web', type: 'publishable' });
  publishable = key.json().apiKey;
  await waitFor(() => gw.controlPlane.listApiKeys(accountId).length === 2 && (gw.controlPlane.accountById(accountId)?.allowedOrigins ?? []).includes(ORIGIN), {
    description: 'the publishable key and the origin in the gateway\u2019s control plane',
    timeoutMs: 10_000,
  });
}, 30_000);

const post = (url: string, payload: string | object, headers: Record<string, string>) =>
  gw.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    remoteAddress: randomClientIp(),
  });

describe('Segment-compatible routes', () => {
  it('answer a bad Basic or body key exactly like a bad Bearer key', async () => {
    const bearer = await post('/v1/events', { events: [{ eventName: 'E', email: 'a@b.co' }] }, { authorization: 'Bearer svc_live_nope' });
    const strip = (body: Record<string, unknown>) => ({ ...body, requestId: undefined, instance: undefined });
    for (const res of [
      await post('/v1/batch', { batch: [{ type: 'track', userId: 'u', event: 'E' }] }, { authorization: basic('svc_live_nope') }),
      await post('/v1/track', { userId: 'u', event: 'E' }, { authorization: basic(`${secret}x`) }),
      await post('/v1/track', { userId: 'u', event: 'E' }, {}),
      await post('/v1/t', { userId: 'u', event: 'E', writeKey: 'svc_pub_nope' }, { 'content-type': 'text/plain' }),
    ]) {
      expect(res.statusCode, res.body).toBe(401);
      expect(strip(res.json())).toEqual(strip(bearer.json()));
      expect(res.headers['www-authenticate']).toBe(bearer.headers['www-authenticate']);
    }
  });

  it('take a batch with Basic auth, answer Segment\u2019s shape, accept a userId-only message and dead-letter the oversize one alone', async () => {
    const res = await post(
      '/v1/batch',
      {
        batch: [
          { type: 'track', userId: 'only-user', event: 'Signed In', messageId: 'routes-1' },
          { type: 'track', userId: 'only-user', event: 'Huge', messageId: 'routes-big', properties: { blob: 'x'.repeat(33 * 1024) } },
          { type: 'track', event: 'Nobody', messageId: 'routes-nobody' },
        ],
        sentAt: new Date().toISOString(),
        writeKey: secret,
      },
      { authorization: basic(secret) },
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, accepted: 1, rejected: 2, requestId: res.headers['x-request-id'] });

    const { values } = await gw.readTopic<EventRecord>('eventsRaw', (v) => v.some((r) => r.eventId === 'routes-1'), 'the userId-only event in events.raw');
    expect(values.find((r) => r.eventId === 'routes-1')).toMatchObject({ accountId, eventName: 'Signed In', email: null, domain: null, userId: 'only-user' });

    const letters = await gw.readTopic<{ messageId?: string }>(
      'deadLetters',
      (v) => ['routes-big', 'routes-nobody'].every((id) => v.some((m) => m?.messageId === id)),
      'both refused messages',
    );
    const keys = letters.keys.filter((k) => k.startsWith(`${accountId}:routes-`));
    expect(keys.sort()).toEqual([`${accountId}:routes-big`, `${accountId}:routes-nobody`]);

    // The account's owner sees them on the dashboard's dead letters, with the reason.
    const owner = await signedInOwner(gw, accountId);
    const listed = await waitFor(
      async () => {
        const res = await owner.request({ method: 'GET', url: '/dashboard/api/deadletters?refresh=true' });
        const entries = (res.json().entries ?? []) as { eventId: string | null; eventName: string | null; code: string; reason: string; consumer: string }[];
        if (!entries.some((e) => e.eventId === 'routes-nobody')) throw new Error(`listed so far: ${res.body}`);
        return entries;
      },
      { description: 'the refused messages on the dashboard', timeoutMs: 20_000 },
    );
    expect(listed.find((e) => e.eventId === 'routes-big')).toMatchObject({ eventName: 'Huge', code: 'too_large', consumer: 'gateway' });
    expect(listed.find((e) => e.eventId === 'routes-nobody')).toMatchObject({ code: 'required', reason: expect.stringContaining('userId') });
  });

  it('refuse a batch over 500 KB whole (413), and publishable keys on the server routes (403)', async () => {
    const big = {
      batch: Array.from({ length: 20 }, (_, i) => ({
        type: 'track',
        userId: 'u',
        event: 'E',
        messageId: `b-${i}`,
        properties: { blob: 'x'.repeat(30 * 1024) },
      })),
    };
    const tooLarge = await post('/v1/batch', big, { authorization: basic(secret) });
    expect(tooLarge.statusCode, tooLarge.body).toBe(413);
    const forbidden = await post('/v1/batch', { batch: [{ type: 'track', userId: 'u', event: 'E' }] }, { authorization: basic(publishable) });
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json()).toMatchObject({ code: 'publishable_key' });
  });

  it('take a browser call with the publishable key in a text/plain body, with CORS for the allowed origin, and never keep the key', async () => {
    const res = await post(
      '/v1/t',
      {
        type: 'track',
        anonymousId: 'anon-browser',
        event: 'Button Clicked',
        messageId: 'browser-1',
        writeKey: publishable,
        context: { page: { url: `${ORIGIN}/p` } },
      },
      { 'content-type': 'text/plain;charset=UTF-8', origin: ORIGIN },
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    const { values } = await gw.readTopic<EventRecord>('eventsRaw', (v) => v.some((r) => r.eventId === 'pk:browser-1'), 'the browser event in events.raw');
    const record = values.find((r) => r.eventId === 'pk:browser-1');
    expect(record).toMatchObject({ anonymousId: 'anon-browser', context: { page: { url: `${ORIGIN}/p` } } });
    expect(JSON.stringify(record)).not.toContain(publishable);

    // A preflight (analytics-next sends JSON as text/plain to avoid one; other clients may not).
    const preflight = await gw.app.inject({
      method: 'OPTIONS',
      url: '/v1/i',
      headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      remoteAddress: randomClientIp(),
    });
    expect(preflight.statusCode).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(ORIGIN);

    const other = await post(
      '/v1/t',
      { anonymousId: 'a', event: 'E', writeKey: publishable },
      { 'content-type': 'text/plain', origin: 'https://evil.example' },
    );
    expect(other.statusCode).toBe(403);
    expect(other.json()).toMatchObject({ code: 'origin_not_allowed' });
  });

  it('are in the OpenAPI document the API fuzzing step reads, each with its body and Segment\u2019s answer', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/v1/openapi.json', remoteAddress: randomClientIp() });
    expect(res.statusCode).toBe(200);
    const paths = res.json().paths as Record<string, { post?: { requestBody?: unknown; responses?: Record<string, unknown> } }>;
    for (const path of [
      '/v1/batch',
      '/v1/track',
      '/v1/identify',
      '/v1/group',
      '/v1/alias',
      '/v1/page',
      '/v1/screen',
      '/v1/t',
      '/v1/i',
      '/v1/p',
      '/v1/g',
      '/v1/a',
    ]) {
      expect(paths[path]?.post?.requestBody, path).toBeDefined();
      expect(Object.keys(paths[path]?.post?.responses ?? {}), path).toEqual(expect.arrayContaining(['200', '401', '413']));
    }
  });

  it('share the monthly allowance: what fits is stored, the rest dead-lettered as quota_exceeded, then 402', async () => {
    const { account, apiKey } = await gw.newAccount('free');
    await gw.redis.set(`quota:{${account.id}}:${allowancePeriod(Date.now()).id}`, 999);
    const track = (messageId: string) => ({ type: 'track', userId: 'u', event: 'Used Feature', messageId });
    const partial = await post('/v1/batch', { batch: [track('quota-1'), track('quota-2')] }, { authorization: basic(apiKey) });
    expect(partial.statusCode, partial.body).toBe(200);
    expect(partial.json()).toMatchObject({ success: true, accepted: 1, rejected: 1 });
    expect(partial.headers['x-quota-remaining']).toBe('0');
    const refused = await post('/v1/track', track('quota-3'), { authorization: basic(apiKey) });
    expect(refused.statusCode, refused.body).toBe(402);
    const letters = await gw.readTopic<{ messageId?: string }>(
      'deadLetters',
      (v) => ['quota-2', 'quota-3'].every((id) => v.some((m) => m?.messageId === id)),
      'the messages over the allowance',
    );
    expect(letters.keys.filter((k) => k.startsWith(`${account.id}:`)).sort()).toEqual([`${account.id}:quota-2`, `${account.id}:quota-3`]);
  });
});

/**
 * Real servers: Kafka and Redis (and a real control plane on Kafka). POST /v1/events as the
 * contract in docs/api.md says: auth, envelope limits, per-event validation with partial
 * acceptance, the 202 receipt only after Kafka has the events, and precise problem bodies.
 */
import { sampleValue } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type EventRecord, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let apiKey: string;
let accountId: string;

beforeAll(async () => {
  gw = await createGatewayFixture();
  ({
    apiKey,
    account: { id: accountId },
  } = await gw.newAccount('pro'));
});

afterAll(async () => {
  await gw?.close();
});

const nextIp = randomClientIp;

function post(body: unknown, options: { key?: string | null; contentType?: string; raw?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': options.contentType ?? 'application/json' };
  const key = options.key === undefined ? apiKey : options.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  return gw.app.inject({ method: 'POST', url: '/v1/events', headers, payload: options.raw ?? JSON.stringify(body), remoteAddress: nextIp() });
}

describe('POST /v1/events', () => {
  it('accepts valid events, answers with their ids, and has written them to Kafka', async () => {
    const res = await post({
      events: [
        { eventName: 'Signed Up', email: ' Ada@Example.com ', properties: { plan: 'pro' } },
        { eventName: 'Company Created', domain: 'Acme.io', eventId: 'evt-fixed-1', timestamp: '2026-01-02T03:04:05.678+02:00' },
      ],
    });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body).toMatchObject({ accepted: 2, rejected: 0, requestId: res.headers['x-request-id'] });
    expect(body.errors).toBeUndefined();
    expect(body.eventIds).toHaveLength(2);
    expect(body.eventIds[0]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(body.eventIds[1]).toBe('evt-fixed-1');
    expect(res.headers['x-quota-limit']).toBe('50000');
    expect(Number(res.headers['x-quota-remaining'])).toBeLessThanOrEqual(49_998);
    expect(res.headers['x-quota-reset']).toMatch(/^\d{4}-\d{2}-01T00:00:00\.000Z$/);

    const { values, keys } = await gw.readTopic<EventRecord>('eventsRaw', (v) => v.some((r) => r.eventId === 'evt-fixed-1'), 'accepted events in events.raw');
    const fixed = values.find((r) => r.eventId === 'evt-fixed-1');
    expect(fixed).toMatchObject({
      v: 1,
      accountId,
      eventName: 'Company Created',
      email: null,
      domain: 'acme.io',
      timestampMs: Date.UTC(2026, 0, 2, 1, 4, 5, 678),
      properties: {},
      source: 'api',
      jobId: null,
    });
    expect(keys[values.indexOf(fixed as EventRecord)]).toBe(`${accountId}:evt-fixed-1`);
    expect(values.find((r) => r.eventId === body.eventIds[0])).toMatchObject({ email: 'ada@example.com', properties: { plan: 'pro' } });
  });

  it('accepts the valid part of a batch and rejects the rest with precise per-event errors', async () => {
    const counted = async () => {
      const text = await gw.metrics.metrics();
      return {
        accepted: sampleValue(text, 'ingest_events_accepted_total', { source: 'api' }) ?? 0,
        required: sampleValue(text, 'ingest_events_rejected_total', { source: 'api', code: 'required' }) ?? 0,
        invalidType: sampleValue(text, 'ingest_events_rejected_total', { source: 'api', code: 'invalid_type' }) ?? 0,
      };
    };
    const before = await counted();
    const res = await post({
      events: [
        { eventName: 'ok', email: 'a@b.io' },
        { eventName: 'no identity' },
        { eventName: 'x'.repeat(256), domain: 'acme.io', eventId: 'bad-1' },
        { eventName: 'ok too', domain: 'acme.io', properties: { constructor: 1 } },
        'not an object',
      ],
    });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body.accepted).toBe(1);
    expect(body.rejected).toBe(4);
    expect(body.eventIds).toHaveLength(1);
    expect(body.errors.map((e: { index: number; field: string; code: string }) => [e.index, e.field, e.code])).toEqual([
      [1, '/events/1/email', 'required'],
      [2, '/events/2/eventName', 'too_long'],
      [3, '/events/3/properties/constructor', 'forbidden_key'],
      [4, '/events/4', 'invalid_type'],
    ]);
    expect(body.errors[1].eventId).toBe('bad-1');
    // Counted by source (api: this route) and the code of each rejected event's first error.
    const after = await counted();
    expect({
      accepted: after.accepted - before.accepted,
      required: after.required - before.required,
      invalidType: after.invalidType - before.invalidType,
    }).toEqual({
      accepted: 1,
      required: 1,
      invalidType: 1,
    });
  });

  it('answers 400 with the errors and accepts nothing when no event is valid', async () => {
    const res = await post({ events: [{ eventName: 'x', email: 'nope' }] });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({
      type: '/problems/validation-error',
      status: 400,
      requestId: res.headers['x-request-id'],
      errors: [{ index: 0, field: '/events/0/email', code: 'invalid_format' }],
    });
  });

  it.each([
    ['no events member', {}, 'required'],
    ['zero events', { events: [] }, 'too_few_items'],
    ['101 events', { events: Array.from({ length: 101 }, () => ({ eventName: 'x', email: 'a@b.io' })) }, 'too_many_items'],
    ['unknown envelope key', { events: [{ eventName: 'x', email: 'a@b.io' }], batch: true }, 'unknown_field'],
    ['events not an array', { events: { eventName: 'x' } }, 'invalid_type'],
  ])('refuses an envelope with %s (400, nothing accepted)', async (_name, body, code) => {
    const res = await post(body);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.map((e: { code: string }) => e.code)).toContain(code);
  });

  it.each([
    ['malformed JSON', '{"events": [', 400, '/problems/invalid-json'],
    ['an empty body', '', 400, '/problems/invalid-json'],
    ['a __proto__ key', '{"events":[{"eventName":"x","email":"a@b.io","properties":{"__proto__":{"admin":true}}}]}', 400, '/problems/validation-error'],
  ])('refuses %s with a problem body', async (_name, raw, status, type) => {
    const res = await post(undefined, { raw });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toMatchObject({ type, status, requestId: expect.any(String) });
  });

  it('refuses a body over 1 MiB with 413', async () => {
    const big = { events: [{ eventName: 'x', email: 'a@b.io', properties: { blob: 'x'.repeat(1024 * 1024) } }] };
    const res = await post(big);
    expect(res.statusCode).toBe(413);
    expect(res.json().type).toBe('/problems/payload-too-large');
  });

  it('refuses other content types with 415', async () => {
    const res = await post(undefined, { raw: 'eventName=x', contentType: 'application/x-www-form-urlencoded' });
    expect(res.statusCode).toBe(415);
    expect(res.json().type).toBe('/problems/unsupported-media-type');
    const text = await post(undefined, { raw: '{"events":[]}', contentType: 'text/plain' });
    expect(text.statusCode).toBe(415);
  });

  it('answers 401 with the same body for a missing, malformed, unknown or revoked key', async () => {
    const revoked = await gw.newAccount('free');
    await gw.controlPlane.revokeApiKey(revoked.account.id, revoked.keyId);
    const event = { events: [{ eventName: 'x', email: 'a@b.io' }] };
    const responses = await Promise.all([
      post(event, { key: null }),
      post(event, { key: 'not-a-key' }),
      post(event, { key: `svc_live_${'A'.repeat(43)}` }),
      post(event, { key: revoked.apiKey }),
    ]);
    const bodies = responses.map((r) => {
      expect(r.statusCode).toBe(401);
      expect(r.headers['www-authenticate']).toContain('Bearer');
      expect(r.headers['x-quota-limit']).toBeUndefined();
      const { requestId, ...rest } = r.json();
      expect(requestId).toBe(r.headers['x-request-id']);
      return rest;
    });
    for (const b of bodies) expect(b).toEqual(bodies[0]);
    expect(bodies[0]).toMatchObject({ type: '/problems/unauthorized', status: 401 });
  });

  it('answers unknown routes with a 404 problem', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/v1/nope', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: nextIp() });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ type: '/problems/not-found', status: 404 });
  });

  it('keeps hostile strings as data', async () => {
    const hostile = "'; DROP TABLE events; -- \\' \u0000 <script>alert(1)</script> =cmd|' /C calc'!A0";
    const res = await post({ events: [{ eventName: hostile, email: 'a@b.io', eventId: 'hostile-1', properties: { [hostile.slice(0, 50)]: hostile } }] });
    expect(res.statusCode).toBe(202);
    const { values } = await gw.readTopic<EventRecord>('eventsRaw', (v) => v.some((r) => r.eventId === 'hostile-1'), 'hostile event');
    expect(values.find((r) => r.eventId === 'hostile-1')?.eventName).toBe(hostile);
  });
});

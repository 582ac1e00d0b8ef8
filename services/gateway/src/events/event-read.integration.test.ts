/**
 * Real servers: ClickHouse (18.16 locally), Kafka and Redis (auth, control plane, limits).
 * GET /v1/events/{eventId} reads what the pipeline stored: rows are inserted into the fixture's
 * `events` table exactly as the processor writes them (every column, epoch-second DateTimes).
 */
import { createClickHouse, createMetricsRegistry } from '@ingest/platform';
import { createJobStatusStore, createSyncStateStore } from '@ingest/domain';
import { integrationEnv, testLogger } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../app.js';
import { loadGatewayConfig } from '../config.js';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let apiKey: string;
let accountId: string;
let otherKey: string;

beforeAll(async () => {
  gw = await createGatewayFixture();
  ({
    apiKey,
    account: { id: accountId },
  } = await gw.newAccount('pro'));
  ({ apiKey: otherKey } = await gw.newAccount('pro'));
});

afterAll(async () => {
  await gw?.close();
});

interface RowInput {
  accountId: string;
  eventId: string;
  eventName?: string;
  email?: string | null;
  domain?: string | null;
  timestampMs?: number;
  receivedAtMs?: number;
  properties?: Record<string, unknown>;
  source?: 'api' | 'bulk' | 'csv';
  jobId?: string | null;
  insertedAtMs?: number;
}

/** A row as the processor writes it (the events-table module of @ingest/domain). */
function row(input: RowInput): Record<string, unknown> {
  const timestampMs = input.timestampMs ?? Date.UTC(2026, 0, 15, 10, 0, 0, 7);
  const receivedAtMs = input.receivedAtMs ?? Date.UTC(2026, 0, 15, 10, 0, 1, 250);
  return {
    account_id: input.accountId,
    event_id: input.eventId,
    event_name: input.eventName ?? 'Signed Up',
    email: input.email === undefined ? 'ada@example.com' : (input.email ?? ''),
    domain: input.domain ?? '',
    event_time: Math.floor(timestampMs / 1000),
    event_time_ms: timestampMs,
    received_at: Math.floor(receivedAtMs / 1000),
    received_at_ms: receivedAtMs,
    properties: JSON.stringify(input.properties ?? {}),
    source: input.source ?? 'api',
    job_id: input.jobId ?? '',
    inserted_at: Math.floor((input.insertedAtMs ?? Date.now()) / 1000),
  };
}

function get(eventIdPath: string, key: string | null = apiKey) {
  return gw.app.inject({
    method: 'GET',
    url: `/v1/events/${eventIdPath}`,
    headers: key === null ? {} : { authorization: `Bearer ${key}` },
    remoteAddress: randomClientIp(),
  });
}

describe('GET /v1/events/{eventId}', () => {
  it('returns a stored event once, with exact fields, although the table holds two copies', async () => {
    const properties = { plan: 'pro', seats: 3, trial: false, nested: { list: [1, 'two', null] }, quote: "it's \\ fine" };
    const input: RowInput = { accountId, eventId: 'evt-read-1', email: 'ada@example.com', domain: 'example.com', properties, source: 'bulk', jobId: 'job_1' };
    // Two inserts, two parts: the duplicate stays until a background merge, as after a redelivery.
    await gw.clickhouse.ch.insert('events', [row({ ...input, insertedAtMs: Date.UTC(2026, 0, 15, 10, 0, 2) })]);
    await gw.clickhouse.ch.insert('events', [row({ ...input, insertedAtMs: Date.UTC(2026, 0, 15, 10, 0, 5) })]);

    const res = await get('evt-read-1');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    expect(res.json()).toEqual({
      eventId: 'evt-read-1',
      eventName: 'Signed Up',
      email: 'ada@example.com',
      domain: 'example.com',
      timestamp: '2026-01-15T10:00:00.007Z',
      receivedAt: '2026-01-15T10:00:01.250Z',
      properties,
      source: 'bulk',
      jobId: 'job_1',
      sync: { state: 'pending' },
    });
    expect(res.headers['x-quota-limit']).toBe('50000');
  });

  it('shows the CRM sync state the crm-sink recorded for the event', async () => {
    await gw.clickhouse.ch.insert('events', [row({ accountId, eventId: 'evt-sync-1' }), row({ accountId, eventId: 'evt-sync-2' })]);
    const syncStates = createSyncStateStore({ redis: gw.redis, now: () => Date.UTC(2026, 0, 15, 10, 0, 9) });
    await syncStates.record([
      { accountId, eventId: 'evt-sync-1', state: 'failed', reason: 'Property "plan_tier" does not exist' },
      { accountId, eventId: 'evt-sync-2', state: 'synced' },
    ]);
    expect((await get('evt-sync-1')).json().sync).toEqual({
      state: 'failed',
      reason: 'Property "plan_tier" does not exist',
      updatedAt: '2026-01-15T10:00:09.000Z',
    });
    expect((await get('evt-sync-2')).json().sync).toEqual({ state: 'synced', updatedAt: '2026-01-15T10:00:09.000Z' });
  });

  it('answers null for a missing identity and job', async () => {
    await gw.clickhouse.ch.insert('events', [row({ accountId, eventId: 'evt-read-2', email: null, domain: 'acme.io' })]);
    const res = await get('evt-read-2');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ email: null, domain: 'acme.io', jobId: null, source: 'api', properties: {} });
  });

  it("answers another account's event and an unknown id with the same 404", async () => {
    await gw.clickhouse.ch.insert('events', [row({ accountId, eventId: 'evt-mine' })]);
    const [foreign, unknown] = await Promise.all([get('evt-mine', otherKey), get('evt-mine-not-stored')]);
    const bodies = [foreign, unknown].map((r) => {
      expect(r.statusCode).toBe(404);
      expect(r.headers['content-type']).toContain('application/problem+json');
      const { requestId, detail, ...rest } = r.json();
      expect(requestId).toBe(r.headers['x-request-id']);
      expect(detail).toMatch(/become readable a few seconds after/);
      return rest;
    });
    expect(bodies[0]).toEqual(bodies[1]);
    expect(bodies[0]).toEqual({ type: '/problems/not-found', title: 'Not found', status: 404 });
    expect((await get('evt-mine')).statusCode).toBe(200);
  });

  it.each([
    ["a quote that would end the literal: x' OR '1'='1", "x'%20OR%20'1'%3D'1"],
    ["an escaped quote: \\'", "%5C'"],
    ['a trailing backslash', 'evt%5C'],
    ["a comment: x'--", "x'--"],
    ['SQL keywords: OR 1=1 --', "'%20OR%201%3D1%20--"],
  ])('answers %s with 404 or 400, never 500', async (_name, path) => {
    // Hostile ids are escaped into SQL: a stored row of the account must not leak through them.
    await gw.clickhouse.ch.insert('events', [row({ accountId, eventId: 'evt-target' })]);
    const res = await get(path);
    expect([400, 404]).toContain(res.statusCode);
    expect(res.json().type).toMatch(/^\/problems\/(not-found|validation-error)$/);
  });

  it('reads back an id made of quotes and backslashes, byte for byte', async () => {
    const eventId = "it's\\'a\\\\trap\"`";
    await gw.clickhouse.ch.insert('events', [row({ accountId, eventId })]);
    const res = await get(encodeURIComponent(eventId));
    expect(res.statusCode).toBe(200);
    expect(res.json().eventId).toBe(eventId);
  });

  it.each([
    ['a space', 'evt%201'],
    ['a non-ASCII character', 'evt-%C3%A9'],
    ['a control character', 'evt%00'],
    ['256 characters', 'x'.repeat(256)],
  ])('refuses an id with %s with 400', async (_name, path) => {
    const res = await get(path);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ type: '/problems/validation-error', status: 400 });
  });

  it('reads back ids longer than the router parameter limit of 100 characters, up to 255', async () => {
    const eventId = `long-${'x'.repeat(250)}`;
    expect(eventId).toHaveLength(255);
    await gw.clickhouse.ch.insert('events', [row({ accountId, eventId })]);
    const res = await get(eventId);
    expect(res.statusCode).toBe(200);
    expect(res.json().eventId).toBe(eventId);
    const unknown = await get(`${eventId.slice(0, 254)}y`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().type).toBe('/problems/not-found');
  });

  it('answers 503 with Retry-After when ClickHouse is unreachable, and ingestion still works', async () => {
    const integration = integrationEnv();
    const config = loadGatewayConfig({
      KAFKA_BROKERS: integration.kafkaBrokers,
      REDIS_URL: integration.redisUrl,
      KAFKA_TOPIC_PREFIX: gw.kafka.prefix,
      CLICKHOUSE_URL: 'http://127.0.0.1:1',
    });
    // Port 1: nothing listens, the connection is refused at once.
    const ch = createClickHouse({ url: config.CLICKHOUSE_URL, requestTimeoutMs: 5_000 });
    const app = await buildApp({
      config,
      logger: testLogger(),
      metrics: createMetricsRegistry('gateway-no-clickhouse'),
      producer: gw.producer,
      redis: gw.redis,
      controlPlane: gw.controlPlane,
      jobStatus: createJobStatusStore({ redis: gw.redis, producer: gw.producer, progressTopic: gw.kafka.topic('jobProgress') }),
      ch,
    });
    try {
      const headers = { authorization: `Bearer ${apiKey}` };
      const read = await app.inject({ method: 'GET', url: '/v1/events/evt-read-1', headers, remoteAddress: randomClientIp() });
      expect(read.statusCode).toBe(503);
      expect(read.headers['retry-after']).toBe('5');
      expect(read.json()).toMatchObject({ type: '/problems/unavailable', status: 503 });
      expect(read.body).not.toContain('127.0.0.1:1');

      const sent = await app.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify({ events: [{ eventName: 'x', email: 'a@b.io' }] }),
        remoteAddress: randomClientIp(),
      });
      expect(sent.statusCode).toBe(202);
    } finally {
      await app.close();
      await ch.close();
    }
  });

  it('needs an API key', async () => {
    const res = await get('evt-read-1', null);
    expect(res.statusCode).toBe(401);
  });

  it('is documented in the OpenAPI document with the StoredEvent schema', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/v1/openapi.json', remoteAddress: randomClientIp() });
    const doc = res.json();
    const operation = doc.paths['/v1/events/{eventId}'].get;
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '400', '404']));
    const stored = operation.responses['200'].content['application/json'].schema;
    expect(Object.keys(stored.properties)).toEqual(expect.arrayContaining(['sync', 'userId', 'anonymousId', 'context']));
    // Optional: events without them (every event of POST /v1/events) answer as before.
    expect(stored.required).not.toEqual(expect.arrayContaining(['userId']));
    expect(stored.required.filter((f: string) => ['userId', 'anonymousId', 'context'].includes(f))).toEqual([]);
    expect(operation.parameters[0]).toMatchObject({ in: 'path', name: 'eventId', schema: { maxLength: 255 } });
    // The wildcard fallback for long ids is not part of the documented API.
    expect(Object.keys(doc.paths).filter((path: string) => path.includes('*'))).toEqual([]);
  });
});

/**
 * Real servers: Kafka and Redis. POST /v1/events/bulk writes the job to jobs.chunks (chunks of
 * 500, then the seal), makes its `queued` status readable through GET /v1/jobs/{jobId} for its
 * own account only, and counts against the allowance.
 */
import type { JobMessage, JobStatus } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { useGatewayFixture, randomClientIp } from '@ingest/testkit/gateway';

const gw = useGatewayFixture();

function request(method: 'GET' | 'POST', url: string, apiKey: string, payload?: unknown) {
  return gw.app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${apiKey}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
    ...(payload ? { payload: JSON.stringify(payload) } : {}),
    remoteAddress: randomClientIp(),
  });
}

describe('POST /v1/events/bulk', () => {
  it('queues 1,201 events as 3 chunks and a seal, with ids for events that had none', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const events = Array.from({ length: 1201 }, (_, i) =>
      i === 5 ? { eventName: 'mine', email: 'a@b.io', eventId: 'own-5' } : { eventName: 'e', email: `u${i}@b.io` },
    );
    events.push('garbage' as never); // validated later, by the job, like every event

    const res = await request('POST', '/v1/events/bulk', apiKey, { events });
    expect(res.statusCode).toBe(202);
    const receipt = res.json();
    expect(receipt).toEqual({ jobId: expect.stringMatching(/^[0-9a-f-]{36}$/), totalEvents: 1202, status: 'queued' });
    expect(res.headers['x-quota-remaining']).toBe(String(50_000 - 1202));

    const { values, keys } = await gw.readTopic<JobMessage>(
      'jobChunks',
      (v) => v.some((m) => m.jobId === receipt.jobId && m.type === 'sealed'),
      'the sealed job',
    );
    const mine = values.filter((m) => m.jobId === receipt.jobId);
    expect(mine.map((m) => (m.type === 'chunk' ? `chunk${m.seq}:${m.items.length}` : m.type))).toEqual(['chunk0:500', 'chunk1:500', 'chunk2:202', 'sealed']);
    expect(keys.filter((_, i) => values[i]?.jobId === receipt.jobId).every((k) => k === receipt.jobId)).toBe(true);
    const items = mine.flatMap((m) => (m.type === 'chunk' ? m.items : []));
    expect(items.map((i) => i.index)).toEqual(Array.from({ length: 1202 }, (_, i) => i));
    expect(items[5]?.event).toMatchObject({ eventId: 'own-5' });
    expect((items[6]?.event as { eventId?: string } | undefined)?.eventId).toMatch(/^[0-9a-f-]{36}$/);
    expect(items[1201]?.event).toBe('garbage');
    expect(mine.at(-1)).toMatchObject({ type: 'sealed', accountId: account.id, source: 'bulk', chunks: 3, totalEvents: 1202 });

    const status = await request('GET', `/v1/jobs/${receipt.jobId}`, apiKey);
    expect(status.statusCode).toBe(200);
    expect(status.json()).toMatchObject<Partial<JobStatus>>({
      jobId: receipt.jobId,
      accountId: account.id,
      status: 'queued',
      totalEvents: 1202,
      processed: 0,
      errors: [],
    });
    expect(status.headers['x-quota-limit']).toBe('50000');
  });

  it('shows a job to its own account only', async () => {
    const owner = await gw.newAccount('pro');
    const other = await gw.newAccount('pro');
    const res = await request('POST', '/v1/events/bulk', owner.apiKey, { events: [{ eventName: 'e', email: 'a@b.io' }] });
    const { jobId } = res.json();
    const foreign = await request('GET', `/v1/jobs/${jobId}`, other.apiKey);
    const unknown = await request('GET', '/v1/jobs/00000000-0000-7000-8000-000000000000', other.apiKey);
    expect(foreign.statusCode).toBe(404);
    expect(unknown.statusCode).toBe(404);
    const { requestId: _a, detail: _d1, ...foreignBody } = foreign.json();
    const { requestId: _b, detail: _d2, ...unknownBody } = unknown.json();
    expect(foreignBody).toEqual(unknownBody);
  });

  it.each([
    ['no events', { events: [] }, 400],
    ['10,001 events', { events: Array.from({ length: 10_001 }, () => ({})) }, 400],
    ['an unknown key', { events: [{}], dryRun: true }, 400],
  ])('refuses an envelope with %s', async (_name, body, status) => {
    const { apiKey } = await gw.newAccount('growth');
    const res = await request('POST', '/v1/events/bulk', apiKey, body);
    expect(res.statusCode).toBe(status);
    expect(res.json().type).toBe('/problems/validation-error');
  });

  it('accepts 10,000 events and refuses a body over 16 MiB with 413', async () => {
    const { apiKey } = await gw.newAccount('growth');
    const ok = await request('POST', '/v1/events/bulk', apiKey, {
      events: Array.from({ length: 10_000 }, (_, i) => ({ eventName: 'e', email: `u${i}@b.io` })),
    });
    expect(ok.statusCode).toBe(202);
    expect(ok.json().totalEvents).toBe(10_000);
    const huge = await request('POST', '/v1/events/bulk', apiKey, {
      events: Array.from({ length: 17 }, () => ({ eventName: 'e', email: 'a@b.io', properties: { blob: 'x'.repeat(1024 * 1024) } })),
    });
    expect(huge.statusCode).toBe(413);
  });
});

describe('GET /v1/usage and the OpenAPI document', () => {
  it('reports the plan, limit and period', async () => {
    const { apiKey } = await gw.newAccount('growth');
    const res = await request('GET', '/v1/usage', apiKey);
    const now = new Date();
    expect(res.json()).toEqual({
      plan: 'growth',
      limit: 500_000,
      used: 0,
      remaining: 500_000,
      periodStart: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
      periodEnd: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
    });
  });

  it('serves an OpenAPI 3.1 document that lists every public route', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/v1/openapi.json', remoteAddress: randomClientIp() });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/events', '/v1/events/bulk', '/v1/backfill/csv', '/v1/jobs/{jobId}', '/v1/usage']));
    const post = doc.paths['/v1/events'].post;
    // The documented body shows the event shape, though only the envelope is validated at once.
    expect(post.requestBody.content['application/json'].schema.properties.events.items).toEqual({ $ref: '#/components/schemas/IngestEvent' });
    expect(Object.keys(doc.components.schemas.IngestEvent.properties)).toEqual(['eventName', 'email', 'domain', 'timestamp', 'eventId', 'properties']);
    expect(post.responses['202'].content['application/json'].schema.required).toEqual(['accepted', 'rejected', 'requestId', 'eventIds']);
    expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['202', '400', '401', '402', '429', '503']));
  });
});

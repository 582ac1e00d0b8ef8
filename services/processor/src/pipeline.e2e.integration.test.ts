/**
 * End to end on real servers (Kafka, ClickHouse, Redis): HTTP POST /v1/events on the real
 * gateway app -> events.raw -> dedupe -> events.unique -> ClickHouse, then read back through
 * GET /v1/events/{id}. A retried request stores nothing twice.
 */
import type { JobStatus } from '@ingest/schemas';
import { createMetricsRegistry, type Component } from '@ingest/platform';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { createProcessor } from './processor.js';

let gw: GatewayFixture;
let parts: Component[] = [];

beforeAll(async () => {
  gw = await createGatewayFixture();
  parts = createProcessor({
    kafka: gw.kafka.kafka,
    producer: gw.producer,
    ch: gw.clickhouse.ch,
    redis: gw.redis,
    logger: testLogger(),
    metrics: createMetricsRegistry('e2e-processor'),
    topicPrefix: gw.kafka.prefix,
    partitionsConsumedConcurrently: 3,
    groups: { jobs: `jobs-${uniqueSuffix()}`, storage: `storage-${uniqueSuffix()}`, dedupe: `dedupe-${uniqueSuffix()}` },
    dedupe: { windowMs: 7 * 24 * 3600 * 1000 },
  });
  for (const p of parts) await p.start();
});

afterAll(async () => {
  for (const p of parts) await p.stop();
  await gw?.close();
});

/** Polls GET /v1/jobs/{jobId} until the job has completed. */
function completedJob(apiKey: string, jobId: string, description: string): Promise<JobStatus> {
  return waitFor(
    async () => {
      const r = await gw.app.inject({
        method: 'GET',
        url: `/v1/jobs/${jobId}`,
        headers: { authorization: `Bearer ${apiKey}` },
        remoteAddress: randomClientIp(),
      });
      const body = r.json<JobStatus>();
      return body.status === 'completed' ? body : undefined;
    },
    { description, timeoutMs: 60_000 },
  );
}

describe('HTTP to ClickHouse', () => {
  it('stores an accepted event once, readable in ClickHouse and through GET /v1/events/{id}', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const body = {
      events: [
        { eventName: 'Signed Up', email: 'Ada@Example.com', eventId: 'e2e-1', timestamp: '2026-03-04T05:06:07.089Z', properties: { plan: 'pro', seats: 3 } },
        { eventName: 'Company Created', domain: 'acme.io' },
      ],
    };
    const first = await gw.app.inject({ method: 'POST', url: '/v1/events', headers, payload: body, remoteAddress: randomClientIp() });
    expect(first.statusCode).toBe(202);
    const generatedId = first.json().eventIds[1];
    // The client retries the same request (e.g. after a timeout): nothing is stored twice.
    const retry = await gw.app.inject({ method: 'POST', url: '/v1/events', headers, payload: { events: [body.events[0]] }, remoteAddress: randomClientIp() });
    expect(retry.statusCode).toBe(202);

    const read = await waitFor(
      async () => {
        const res = await gw.app.inject({
          method: 'GET',
          url: '/v1/events/e2e-1',
          headers: { authorization: `Bearer ${apiKey}` },
          remoteAddress: randomClientIp(),
        });
        return res.statusCode === 200 ? res : undefined;
      },
      { description: 'the event readable through the API', timeoutMs: 30_000 },
    );
    expect(read.json()).toEqual({
      eventId: 'e2e-1',
      eventName: 'Signed Up',
      email: 'ada@example.com',
      domain: null,
      timestamp: '2026-03-04T05:06:07.089Z',
      receivedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      properties: { plan: 'pro', seats: 3 },
      source: 'api',
      jobId: null,
      sync: { state: 'pending' },
    });

    await waitFor(
      async () => {
        const rows = await gw.clickhouse.ch.query<{ event_id: string }>(`SELECT event_id FROM events WHERE account_id = '${account.id}' ORDER BY event_id`);
        return rows.length === 2 ? rows : undefined;
      },
      { description: 'both events in ClickHouse', timeoutMs: 30_000 },
    );
    // Without FINAL too: the retry never reached the table (dedupe dropped it).
    const rows = await gw.clickhouse.ch.query<{ event_id: string }>(`SELECT event_id FROM events WHERE account_id = '${account.id}' ORDER BY event_id`);
    expect(rows.map((r) => r.event_id).sort()).toEqual(['e2e-1', generatedId].sort());
    // The materialized view's part can become visible a moment after the events rows: poll.
    const usage = await waitFor(
      async () => {
        const [row] = await gw.clickhouse.ch.query<{ n: string }>(`SELECT uniqExactMerge(events) AS n FROM usage_hourly WHERE account_id = '${account.id}'`);
        return Number(row?.n) >= 2 ? Number(row?.n) : undefined;
      },
      { description: 'both events in usage_hourly', timeoutMs: 10_000 },
    );
    expect(usage).toBe(2);
  });

  it('runs a bulk job to completion with exact counts, its events stored once', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const events: unknown[] = Array.from({ length: 1_100 }, (_, i) => ({ eventName: 'Imported', email: `u${i}@example.com`, eventId: `bulk-${i}` }));
    events.push({ eventName: 'Imported', email: 'u0@example.com', eventId: 'bulk-0' }); // repeat inside the job
    events.push({ eventName: 'Imported', email: 'not-an-email' }); // rejected
    const res = await gw.app.inject({
      method: 'POST',
      url: '/v1/events/bulk',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      payload: { events },
      remoteAddress: randomClientIp(),
    });
    expect(res.statusCode).toBe(202);
    const { jobId } = res.json();

    const status = await completedJob(apiKey, jobId, 'the job completed');
    expect(status).toMatchObject({ totalEvents: 1_102, processed: 1_102, accepted: 1_100, rejected: 1, duplicates: 1 });
    expect(status.errors).toEqual([expect.objectContaining({ index: 1_101, field: '/events/1101/email', code: 'invalid_format' })]);

    await waitFor(
      async () => {
        const [row] = await gw.clickhouse.ch.query<{ n: string; ids: string }>(
          `SELECT count() AS n, uniqExact(event_id) AS ids FROM events WHERE account_id = '${account.id}' AND source = 'bulk' AND job_id = '${jobId}'`,
        );
        return Number(row?.n) === 1_100 && Number(row?.ids) === 1_100 ? row : undefined;
      },
      { description: '1,100 bulk events in ClickHouse, each once', timeoutMs: 60_000 },
    );
  });

  it('runs a CSV upload to completion, with row and column in its errors', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const csv =
      'event_name,timestamp,email,plan\nSigned Up,2026-01-01T00:00:00Z,ada@example.com,pro\nSigned Up,yesterday,bob@example.com,free\nSigned Up,2026-01-02T00:00:00Z,eve@example.com,\n';
    const boundary = `----e2e${uniqueSuffix()}`;
    const payload = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="e.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`,
    );
    const res = await gw.app.inject({
      method: 'POST',
      url: '/v1/backfill/csv',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      payload,
      remoteAddress: randomClientIp(),
    });
    expect(res.statusCode).toBe(202);
    const { jobId } = res.json();
    const status = await completedJob(apiKey, jobId, 'the CSV job completed');
    expect(status).toMatchObject({ source: 'csv', totalEvents: 3, processed: 3, accepted: 2, rejected: 1, duplicates: 0 });
    expect(status.errors).toEqual([expect.objectContaining({ index: 1, row: 3, column: 'timestamp', code: 'invalid_format' })]);
    const rows = await waitFor(
      async () => {
        const r = await gw.clickhouse.ch.query<{ email: string; properties: string }>(
          `SELECT email, properties FROM events FINAL WHERE account_id = '${account.id}' AND source = 'csv' ORDER BY email`,
        );
        return r.length === 2 ? r : undefined;
      },
      { description: 'the two CSV events in ClickHouse' },
    );
    expect(rows).toEqual([
      { email: 'ada@example.com', properties: '{"plan":"pro"}' },
      { email: 'eve@example.com', properties: '{}' },
    ]);
  });
});

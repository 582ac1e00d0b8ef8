/**
 * Real servers: Kafka, Redis, ClickHouse and the real gateway (listening on a port, so the SDK's
 * own fetch is what talks to it) with the real processor in this process (jobs, dedupe,
 * storage). Between them a proxy that loses answers after the gateway has acted on the request
 * (a request stored, its 202 never seen: what a dropped connection or a proxy timeout does) and
 * answers some requests 503 itself. The SDK must retry, and every event must be stored once.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Component, sql } from '@ingest/platform';
import { waitFor } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture } from '@ingest/testkit/gateway';
import { describePipeline, startProcessorFor } from '@ingest/testkit/processor';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { createClient } from './client.js';
import type { JobStatus } from './jobs.js';

const NAME = `sdk-client-${Date.now()}`;
let gw: GatewayFixture;
let parts: Component[] = [];
let proxy: Server;
let proxyUrl: string;
/** What the proxy does with the next requests to a path (then: forward and answer). */
const plan = new Map<string, ('lose-answer' | '503')[]>();
const forwarded = new Map<string, number>();

async function body(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function startProxy(target: string): Promise<void> {
  proxy = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      const bytes = await body(req);
      const step = plan.get(path)?.shift();
      if (step === '503') {
        res.writeHead(503, { 'content-type': 'application/problem+json' }).end('{"type":"/problems/unavailable","status":503}');
        return;
      }
      const headers = Object.fromEntries(
        ['authorization', 'content-type', 'content-encoding', 'idempotency-key', 'accept'].flatMap((h) =>
          req.headers[h] ? [[h, String(req.headers[h])]] : [],
        ),
      );
      forwarded.set(path, (forwarded.get(path) ?? 0) + 1);
      const answer = await fetch(new URL(req.url ?? '/', target), { method: req.method ?? 'GET', headers, ...(bytes.length ? { body: bytes } : {}) });
      const text = await answer.text();
      if (step === 'lose-answer') return void req.socket.destroy();
      res.writeHead(answer.status, Object.fromEntries(answer.headers)).end(text);
    })().catch(() => req.socket.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
}

beforeAll(async () => {
  gw = await createGatewayFixture();
  parts = await startProcessorFor(gw, NAME);
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  await startProxy(`http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`);
}, 90_000);

afterAll(async () => {
  await new Promise((resolve) => proxy?.close(resolve));
  for (const part of [...parts].reverse()) await part.stop();
  await gw?.close();
});

/** Rows per event id of an account, without FINAL: a second copy of any event would show. */
async function storedCopies(accountId: string, expected: number): Promise<Map<string, number>> {
  return waitFor(
    async () => {
      const rows = await gw.clickhouse.ch.query<{ event_id: string; n: string }>(
        sql`SELECT event_id, count() AS n FROM events WHERE account_id = ${accountId} GROUP BY event_id`,
      );
      if (rows.length < expected) throw new Error(`${rows.length} of ${expected} event ids stored so far`);
      return new Map(rows.map((r) => [r.event_id, Number(r.n)]));
    },
    { description: `${expected} stored event ids of ${accountId}`, timeoutMs: 60_000, intervalMs: 500 },
  );
}

/** What the clients surfaced: each test expects none of it. */
const surfaced: string[] = [];
const clientFor = (apiKey: string) =>
  createClient({
    apiKey,
    baseUrl: proxyUrl,
    batch: { maxEvents: 50, intervalMs: 100 },
    retry: { baseDelayMs: 20, maxDelayMs: 200 },
    onError: (e) => void surfaced.push(`${e.code}: ${e.message}`),
    onRejected: (r) => void surfaced.push(...r.map((x) => `${x.event.eventId} ${x.field} ${x.code}`)),
  });

describe('@ingest/client against the real gateway', () => {
  it('track(): lost answers, 503s and events the producer sends twice are each stored once', async () => {
    onTestFailed(async () => console.error(await describePipeline(gw, NAME)));
    const { account, apiKey } = await gw.newAccount('growth');
    plan.set('/v1/events', ['lose-answer', '503', 'lose-answer']);
    forwarded.set('/v1/events', 0);
    const client = clientFor(apiKey);
    for (let i = 0; i < 20; i++) await client.track({ eventName: 'Ordered', email: `dup${i}@example.com`, eventId: `order-${i}` });
    for (let i = 0; i < 200; i++) await client.track({ eventName: 'Signed Up', email: `user${i}@example.com`, properties: { i } });
    // The producer's own retry of the first 20 (same eventIds), in later batches.
    for (let i = 0; i < 20; i++) await client.track({ eventName: 'Ordered', email: `dup${i}@example.com`, eventId: `order-${i}` });
    await client.close();

    expect(surfaced).toEqual([]);
    expect(client.stats()).toMatchObject({ accepted: 240, rejected: 0, failed: 0, queued: 0, retries: 3 });
    // Five batches, and the gateway saw two of them twice.
    expect(forwarded.get('/v1/events')).toBe(5 + 2);
    const copies = await storedCopies(account.id, 220);
    expect(copies.size).toBe(220);
    expect([...copies.values()].filter((n) => n !== 1)).toEqual([]);
    expect(copies.get('order-7')).toBe(1);
  });

  it('bulk(): a lost answer is retried with the same Idempotency-Key: one job, progress reported, every event stored once', async () => {
    onTestFailed(async () => console.error(await describePipeline(gw, NAME)));
    const { account, apiKey } = await gw.newAccount('growth');
    plan.set('/v1/events/bulk', ['lose-answer']);
    forwarded.set('/v1/events/bulk', 0);
    const client = clientFor(apiKey);
    const progress: JobStatus[] = [];
    const events = Array.from({ length: 1_200 }, (_, i) => ({ eventName: 'Imported', domain: `c${i}.example.com`, timestamp: '2026-01-01T00:00:00Z' }));
    const done = await client.bulk(events, { onProgress: (s) => progress.push(s), pollIntervalMs: 300, maxWaitMs: 60_000 });

    expect(surfaced).toEqual([]);
    expect(forwarded.get('/v1/events/bulk')).toBe(2);
    expect(done).toMatchObject({ status: 'completed', totalEvents: 1_200, accepted: 1_200, rejected: 0 });
    expect(progress.length).toBeGreaterThanOrEqual(1);
    expect(progress.at(-1)?.status).toBe('completed');
    const copies = await storedCopies(account.id, 1_200);
    expect([...copies.values()].filter((n) => n !== 1)).toEqual([]);
    const jobs = await gw.clickhouse.ch.query<{ n: string }>(sql`SELECT uniqExact(job_id) AS n FROM events WHERE account_id = ${account.id}`);
    expect(jobs[0]?.n).toBe('1');
  });

  it('uploadCsv(): a gzipped file becomes one job; its rejected rows come back with row and code', async () => {
    onTestFailed(async () => console.error(await describePipeline(gw, NAME)));
    const { account, apiKey } = await gw.newAccount('growth');
    const rows = Array.from({ length: 40 }, (_, i) => `Imported,2026-01-02T00:00:00Z,u${i}@example.com,${i}`);
    rows.push('Imported,not-a-time,bad@example.com,40');
    const csv = new Blob([`event_name,timestamp,email,seq\n${rows.join('\n')}\n`]);
    const progress: string[] = [];
    const done = await uploadWith(apiKey, csv, progress);
    expect(done).toMatchObject({ status: 'completed', source: 'csv', totalEvents: 41, accepted: 40, rejected: 1 });
    expect(done.errors[0]).toMatchObject({ row: 42, code: 'invalid_format' });
    expect(progress.at(-1)).toBe('completed');
    const copies = await storedCopies(account.id, 40);
    expect(copies.size).toBe(40);
  });
});

function uploadWith(apiKey: string, csv: Blob, progress: string[]): Promise<JobStatus> {
  return clientFor(apiKey).uploadCsv(csv, { filename: 'export.csv', onProgress: (s) => progress.push(s.status), pollIntervalMs: 300, maxWaitMs: 60_000 });
}

/**
 * The client against a scripted fake API on a real socket (fake-api.fixture.ts): batching,
 * gzip, ids, retries and what each answer means, the bounded queue, shutdown.
 */
import { Readable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import { waitFor } from '@ingest/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Rejection } from './batch.sender.js';
import { createClient, type IngestClient } from './client.js';
import type { ClientOptions } from './client.options.js';
import { type IngestClientError, QuotaExceededError } from './errors.js';
import { type FakeApi, type RecordedRequest, startFakeApi } from './fake-api.fixture.js';

let api: FakeApi;
let clients: IngestClient[] = [];
let errors: IngestClientError[] = [];
let rejections: Rejection[] = [];

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const event = (i: number) => ({ eventName: 'Signed Up', email: `user${i}@example.com`, properties: { i } });

function client(options: Partial<ClientOptions> = {}): IngestClient {
  const c = createClient({
    apiKey: 'svc_live_test',
    baseUrl: api.url,
    retry: { baseDelayMs: 1, maxDelayMs: 20 },
    onError: (e) => errors.push(e),
    onRejected: (r) => rejections.push(...r),
    ...options,
  });
  clients.push(c);
  return c;
}

const until = (check: () => boolean, what: string, c?: IngestClient, timeoutMs = 10_000) =>
  waitFor(
    () => {
      if (check()) return true;
      throw new Error(`${what}: stats ${JSON.stringify(c?.stats())}, ${api.requests.length} requests, errors ${errors.map((e) => e.code).join(',')}`);
    },
    { description: what, timeoutMs, intervalMs: 10 },
  );

/** The first two requests (failing the test when there are fewer). */
function gapOf(requests: RecordedRequest[]): [RecordedRequest, RecordedRequest] {
  const [first, second] = requests;
  if (!first || !second) throw new Error(`expected two requests, saw ${requests.length}`);
  return [first, second];
}

beforeEach(async () => {
  api = await startFakeApi();
  errors = [];
  rejections = [];
});

afterEach(async () => {
  for (const c of clients) c.takeUnsent();
  await Promise.all(clients.map((c) => c.close({ timeoutMs: 1_000 }).catch(() => undefined)));
  clients = [];
  await api.close();
});

describe('batching', () => {
  it('sends at most 100 events a request, gzipped, each with its own UUIDv7 eventId, and flush() waits for all', async () => {
    const c = client();
    const results = await Promise.all(Array.from({ length: 250 }, (_, i) => c.track(event(i))));
    await c.flush();
    expect(api.requests.map((r) => r.events.length)).toEqual([100, 100, 50]);
    expect(api.requests.every((r) => r.headers['content-encoding'] === 'gzip')).toBe(true);
    expect(api.requests[0]?.headers.authorization).toBe('Bearer svc_live_test');
    const ids = api.requests.flatMap((r) => r.events.map((e) => e.eventId));
    expect(new Set(ids).size).toBe(250);
    expect(ids.every((id) => UUID_V7.test(id))).toBe(true);
    expect(ids).toEqual(results.map((r) => r.eventId));
    expect(c.stats()).toMatchObject({ queued: 0, inFlight: 0, accepted: 250, rejected: 0, failed: 0 });
  });

  it('keeps an eventId the caller set, and sends a lone event once its interval has passed, without flush()', async () => {
    const c = client({ batch: { intervalMs: 50 } });
    await c.track({ ...event(1), eventId: 'order-1' });
    await until(() => api.requests.length === 1, 'the interval sends the event', c);
    expect(api.requests[0]?.events.map((e) => e.eventId)).toEqual(['order-1']);
    // A small body is not worth gzip's frame.
    expect(api.requests[0]?.headers['content-encoding']).toBeUndefined();
  });

  it('cuts batches at batch.maxBytes, and refuses an event larger than that alone', async () => {
    const c = client({ batch: { maxBytes: 4_096 } });
    for (let i = 0; i < 20; i++) await c.track({ ...event(i), properties: { blob: 'x'.repeat(900) } });
    await c.flush();
    expect(api.requests.length).toBeGreaterThan(4);
    for (const r of api.requests) expect(JSON.stringify({ events: r.events }).length).toBeLessThanOrEqual(4_096);
    await expect(c.track({ ...event(0), properties: { blob: 'x'.repeat(5_000) } })).rejects.toMatchObject({
      code: 'invalid_event',
      errors: [{ code: 'too_large' }],
    });
  });

  it('sends without gzip when compression is none', async () => {
    const c = client({ compression: 'none' });
    for (let i = 0; i < 100; i++) await c.track(event(i));
    await c.flush();
    expect(api.requests[0]?.headers['content-encoding']).toBeUndefined();
    expect(api.requests[0]?.events).toHaveLength(100);
  });
});

describe('invalid events', () => {
  it('are refused by track() with the API’s fields and codes, before any request', async () => {
    const c = client();
    const refused = await c.track({ eventName: '', email: 'not-an-email', colour: 'red' } as never).catch((e: IngestClientError) => e);
    expect(refused).toMatchObject({ code: 'invalid_event', status: 400 });
    expect((refused as IngestClientError).errors.map((e) => `${e.field} ${e.code}`).sort()).toEqual(['/colour unknown_field', '/eventName too_short']);
    await expect(c.track({ eventName: 'x' })).rejects.toMatchObject({ errors: [{ field: '/email', code: 'required' }] });
    await c.flush();
    expect(api.requests).toHaveLength(0);
  });
});

describe('retries', () => {
  it('429 with Retry-After: waits as asked, then sends the same events with the same ids', async () => {
    api.script({ status: 429, headers: { 'retry-after': '1' }, body: { type: '/problems/rate-limited', status: 429 } });
    const c = client();
    await c.track(event(1));
    await c.flush();
    expect(api.requests).toHaveLength(2);
    const [first, second] = gapOf(api.requests);
    expect(second.at - first.at).toBeGreaterThanOrEqual(950);
    expect(second.events).toEqual(first.events);
    expect(c.stats()).toMatchObject({ accepted: 1, retries: 1 });
  });

  it('429 with only the RateLimit header: waits for the exhausted policy’s t', async () => {
    api.script({ status: 429, headers: { ratelimit: '"ip";r=5;t=30, "account_events";r=0;t=1' } });
    const c = client();
    await c.track(event(1));
    await c.flush();
    const [first, second] = gapOf(api.requests);
    expect(second.at - first.at).toBeGreaterThanOrEqual(950);
    expect(second.at - first.at).toBeLessThan(10_000);
  });

  it('a 202 whose RateLimit header says a policy is exhausted: the next request waits its t instead of meeting a 429', async () => {
    api.script({ acceptExcept: {}, headers: { ratelimit: '"ip";r=0;t=1, "account_events";r=500;t=1' } });
    const c = client();
    for (let i = 0; i < 200; i++) await c.track(event(i));
    await c.flush();
    const [first, second] = gapOf(api.requests);
    expect(second.at - first.at).toBeGreaterThanOrEqual(950);
    expect(c.stats()).toMatchObject({ accepted: 200, retries: 0 });
  });

  it('503, 504, a connection reset and a 2xx that is not a receipt are retried until a 202', async () => {
    api.script(
      { status: 503, body: { type: '/problems/unavailable' } },
      { status: 504, body: { type: '/problems/outcome-unknown' } },
      { reset: true },
      { raw: '<html>proxy</html>', status: 200 },
    );
    const c = client();
    for (let i = 0; i < 3; i++) await c.track(event(i));
    await c.flush();
    expect(api.requests).toHaveLength(5);
    const ids = api.requests.map((r) => r.events.map((e) => e.eventId).join());
    expect(new Set(ids).size).toBe(1);
    expect(c.stats()).toMatchObject({ accepted: 3, retries: 4, failed: 0 });
    expect(errors).toEqual([]);
  });

  it('a hanging server: each attempt times out, the batch is given up after maxAttempts and surfaced with its events', async () => {
    api.script({ hang: true }, { hang: true }, { hang: true });
    const c = client({ timeoutMs: 200, retry: { maxAttempts: 3, baseDelayMs: 1 } });
    await c.track(event(1));
    await c.flush();
    expect(api.requests).toHaveLength(3);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'retries_exhausted', eventCount: 1, retryable: true });
    expect(errors[0]?.message).toContain('no complete answer within 200 ms');
    expect(errors[0]?.events.map((e) => e.email)).toEqual(['user1@example.com']);
    expect(c.stats()).toMatchObject({ failed: 1, accepted: 0, queued: 0 });
    // The next event goes through: the client is not stuck.
    await c.track(event(2));
    await c.flush();
    expect(c.stats().accepted).toBe(1);
  });

  it('an answer of megabytes of garbage is not read past its bound, and retried', async () => {
    api.script({ raw: 'x'.repeat(3 * 1024 * 1024), status: 200, contentType: 'application/json' });
    const c = client();
    await c.track(event(1));
    await c.flush();
    expect(api.requests).toHaveLength(2);
    expect(c.stats()).toMatchObject({ accepted: 1, retries: 1 });
  });

  it('401 and other refusals are not retried: the batch is surfaced with the status and problem', async () => {
    api.script({ status: 401, body: { type: '/problems/unauthorized', status: 401, detail: 'The API key is invalid or revoked.' } });
    const c = client();
    await c.track(event(1));
    await c.flush();
    expect(api.requests).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'request_refused', status: 401, eventCount: 1 });
    expect(errors[0]?.message).toContain('invalid or revoked');
  });
});

describe('what the API answers per event', () => {
  it('a 202 with rejections: each rejected event is surfaced with its code and field', async () => {
    api.script({ acceptExcept: { 1: 'invalid_format' } });
    const c = client();
    for (let i = 0; i < 3; i++) await c.track(event(i));
    await c.flush();
    expect(rejections.map((r) => [r.event.email, r.code, r.field])).toEqual([['user1@example.com', 'invalid_format', '/email']]);
    expect(c.stats()).toMatchObject({ accepted: 2, rejected: 1 });
  });

  it('402 stops sending, surfaces the quota fields, keeps the events, and resume() sends them', async () => {
    const quota = { type: '/problems/quota-exceeded', status: 402, limit: 1000, used: 1000, remaining: 0, resetsAt: '2026-12-01T00:00:00.000Z' };
    api.script({ status: 402, body: quota });
    const c = client();
    for (let i = 0; i < 3; i++) await c.track(event(i));
    const flushed = await c.flush().catch((e: unknown) => e);
    expect(flushed).toBeInstanceOf(QuotaExceededError);
    expect((flushed as QuotaExceededError).quota).toEqual({ limit: 1000, used: 1000, remaining: 0, resetsAt: '2026-12-01T00:00:00.000Z' });
    expect(errors.map((e) => e.code)).toEqual(['quota_exceeded']);
    await c.track(event(3));
    await expect(c.flush()).rejects.toBeInstanceOf(QuotaExceededError);
    expect(api.requests).toHaveLength(1);
    expect(c.stats()).toMatchObject({ queued: 4, accepted: 0 });
    c.resume();
    await c.flush();
    expect(api.requests.slice(1).flatMap((r) => r.events.map((e) => e.email))).toEqual([0, 1, 2, 3].map((i) => `user${i}@example.com`));
    expect(c.stats()).toMatchObject({ queued: 0, accepted: 4 });
  });

  it('402: sending resumes by itself when the allowance resets (resetsAt)', async () => {
    api.script({
      status: 402,
      body: { type: '/problems/quota-exceeded', limit: 10, used: 10, remaining: 0, resetsAt: new Date(Date.now() + 300).toISOString() },
    });
    const c = client();
    for (let i = 0; i < 3; i++) await c.track(event(i));
    await expect(c.flush()).rejects.toMatchObject({ code: 'quota_exceeded' });
    await until(() => c.stats().accepted === 3, 'the events sent after resetsAt', c);
    expect(api.requests).toHaveLength(2);
  });

  it('a 202 whose rejections are quota_exceeded: those events are kept for after resume(), the others settled', async () => {
    api.script({ acceptExcept: { 1: 'quota_exceeded', 2: 'quota_exceeded' }, headers: { 'x-quota-limit': '50000', 'x-quota-remaining': '0' } });
    const c = client();
    for (let i = 0; i < 3; i++) await c.track(event(i));
    await expect(c.flush()).rejects.toMatchObject({ code: 'quota_exceeded', quota: { limit: 50000, remaining: 0 }, eventCount: 2 });
    expect(c.stats()).toMatchObject({ accepted: 1, rejected: 0, queued: 2 });
    await expect(c.close()).rejects.toMatchObject({ code: 'quota_exceeded' });
    expect(c.takeUnsent().map((e) => e.email)).toEqual(['user1@example.com', 'user2@example.com']);
  });
});

describe('the bounded queue', () => {
  it('whenFull drop: a hanging server and 5,000 events hold the queue bound plus one batch; the rest are counted as dropped', async () => {
    api.script({ hang: true });
    const c = client({ queue: { maxEvents: 50, whenFull: 'drop' }, timeoutMs: 60_000 });
    let dropped = 0;
    for (let i = 0; i < 5_000; i++) if (!(await c.track(event(i))).queued) dropped++;
    const s = c.stats();
    expect(s.queued + s.inFlight).toBeLessThanOrEqual(50 + 100);
    expect(s.queued).toBeLessThanOrEqual(50);
    expect(s.dropped).toBe(dropped);
    expect(dropped).toBeGreaterThanOrEqual(5_000 - 150);
  });

  it('whenFull wait: track() resolves only once there is room (backpressure), and too many waiting callers are refused', async () => {
    api.slowBy(100);
    const c = client({ queue: { maxEvents: 5, whenFull: 'wait', maxWaiting: 3 }, batch: { maxEvents: 5 } });
    for (let i = 0; i < 5; i++) await c.track(event(i));
    // The queue was full, so a batch left for the slow server; five more fill it again.
    for (let i = 5; i < 10; i++) await c.track(event(i));
    const waiting = [c.track(event(10)), c.track(event(11)), c.track(event(12))];
    let settled = 0;
    for (const w of waiting) void w.then(() => settled++);
    await expect(c.track(event(13))).rejects.toMatchObject({ code: 'queue_full' });
    expect(settled).toBe(0);
    await Promise.all(waiting);
    await c.flush();
    expect(api.requests.flatMap((r) => r.events).length).toBe(13);
    expect(c.stats()).toMatchObject({ accepted: 13, queued: 0 });
  });
});

describe('shutdown', () => {
  it('close() sends everything queued and refuses later events', async () => {
    const c = client({ batch: { intervalMs: 60_000 } });
    for (let i = 0; i < 130; i++) await c.track(event(i));
    await c.close();
    expect(api.requests.flatMap((r) => r.events)).toHaveLength(130);
    await expect(c.track(event(1))).rejects.toMatchObject({ code: 'closed' });
  });
});

describe('options and backfills', () => {
  it('a publishable key sends uncompressed by default (the gateway’s CORS does not allow Content-Encoding)', async () => {
    const c = client({ apiKey: 'svc_pub_test' });
    for (let i = 0; i < 100; i++) await c.track(event(i));
    await c.flush();
    expect(api.requests[0]?.headers['content-encoding']).toBeUndefined();
  });

  it('refuses settings outside the API’s limits when the client is made', () => {
    expect(() => client({ batch: { maxEvents: 101 } })).toThrow(/batch.maxEvents must be an integer from 1 to 100/);
    expect(() => client({ baseUrl: 'ftp://x' })).toThrow(/http\(s\)/);
  });

  it('bulk() checks every event first: one bad event refuses the call with its index, and nothing is sent', async () => {
    const c = client();
    const events = [event(0), { eventName: 'x', email: 'nope' }, event(2)];
    await expect(c.bulk(events)).rejects.toMatchObject({ code: 'invalid_event', errors: [{ index: 1, field: '/email', code: 'invalid_format' }] });
    await expect(c.bulk([])).rejects.toMatchObject({ errors: [{ code: 'too_few_items' }] });
    expect(api.requests).toHaveLength(0);
  });
});

describe('flushKeepalive (page hide)', () => {
  it('sends what is queued at once with keepalive, within the 64 KiB budget; the rest stays queued', async () => {
    const keepalive: { flag: boolean | undefined; bytes: number }[] = [];
    const c = client({
      apiKey: 'svc_pub_test',
      batch: { intervalMs: 600_000 },
      fetch: (input, init) => {
        keepalive.push({ flag: init?.keepalive, bytes: (init?.body as Uint8Array).byteLength });
        return fetch(input, init);
      },
    });
    // 90 events of about 1 KB: fewer than a batch (nothing is sent before), more than the budget.
    for (let i = 0; i < 90; i++) await c.track({ ...event(i), properties: { blob: 'x'.repeat(900) } });
    const queuedBefore = c.stats().queued;
    c.flushKeepalive();
    await until(() => c.stats().inFlight === 0 && c.stats().accepted > 0, 'the keepalive batches are answered', c);
    expect(keepalive.every((k) => k.flag === true)).toBe(true);
    expect(keepalive.reduce((n, k) => n + k.bytes, 0)).toBeLessThanOrEqual(60 * 1024);
    expect(c.stats().accepted).toBeGreaterThan(40);
    expect(c.stats().accepted).toBeLessThan(90);
    expect(c.stats().accepted + c.stats().queued).toBe(queuedBefore);
    // What stayed queued goes out as usual.
    await c.flush();
    expect(c.stats()).toMatchObject({ accepted: queuedBefore, queued: 0 });
  });
});

describe('shutdown with a deadline, and a base URL with a path', () => {
  it('close({ timeoutMs }) against a hanging server rejects with close_timeout, and takeUnsent() hands the events over', async () => {
    api.script({ hang: true });
    const c = client({ timeoutMs: 30_000 });
    for (let i = 0; i < 3; i++) await c.track(event(i));
    const started = Date.now();
    await expect(c.close({ timeoutMs: 300 })).rejects.toMatchObject({ code: 'close_timeout', eventCount: 3 });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(c.takeUnsent().map((e) => e.email)).toEqual([0, 1, 2].map((i) => `user${i}@example.com`));
  });

  it('a 402 tells callers waiting for room instead of leaving them waiting', async () => {
    api.script({ status: 402, body: { type: '/problems/quota-exceeded', limit: 10, used: 10, remaining: 0 } });
    const c = client({ queue: { maxEvents: 100, whenFull: 'wait' }, batch: { maxEvents: 100 } });
    for (let i = 0; i < 100; i++) await c.track(event(i));
    // The full queue was sent as one batch; the 402 put it back: the queue is full again.
    await until(() => errors.length === 1, 'the 402 surfaced', c);
    await expect(c.track(event(100))).rejects.toMatchObject({ code: 'quota_exceeded' });
  });

  it('keeps the base URL’s path: the API behind a prefix', async () => {
    const c = client({ baseUrl: `${api.url}/ingest` });
    await c.track(event(1));
    await c.flush();
    expect(api.requests[0]?.url).toBe('/ingest/v1/events');
  });
});

describe('uploadCsv() and bulk() against the fake', () => {
  const job = (status: string, processed: number) => ({
    status: 200,
    body: {
      jobId: 'job-1',
      source: 'csv',
      status,
      totalEvents: 2,
      processed,
      accepted: processed,
      rejected: 0,
      duplicates: 0,
      errors: [],
      createdAt: 'x',
      completedAt: null,
    },
  });

  it('sends a stream as a gzipped file part with an Idempotency-Key kept across a retry, then polls and reports progress', async () => {
    api.script(
      { status: 503, headers: { 'retry-after': '0' } },
      { status: 202, body: { jobId: 'job-1', totalEvents: 2, status: 'queued' } },
      job('queued', 0),
      job('processing', 1),
      job('processing', 1),
      job('completed', 2),
    );
    const c = client();
    const csv = 'event_name,timestamp,email\nA,2026-01-01T00:00:00Z,a@example.com\nB,2026-01-01T00:00:00Z,b@example.com\n';
    const progress: string[] = [];
    const done = await c.uploadCsv(Readable.from([Buffer.from(csv.slice(0, 30)), Buffer.from(csv.slice(30))]), {
      timezone: 'UTC',
      pollIntervalMs: 5,
      onProgress: (s) => progress.push(`${s.status}:${s.processed}`),
    });
    expect(done).toMatchObject({ status: 'completed', processed: 2 });
    expect(progress).toEqual(['queued:0', 'processing:1', 'completed:2']);
    const [first, second, ...polls] = api.requests;
    expect(first?.url).toBe('/v1/backfill/csv');
    expect(first?.headers['idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);
    expect(second?.headers['idempotency-key']).toBe(first?.headers['idempotency-key']);
    expect(first?.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    const body = second?.raw ?? Buffer.alloc(0);
    expect(body.toString('latin1')).toContain('filename="events.csv.gz"');
    expect(body.toString('latin1')).toContain('name="timezone"');
    // The file part is gzip (its magic bytes), and inflates to the CSV.
    const start = body.indexOf('\r\n\r\n', body.indexOf('filename="events.csv.gz"')) + 4;
    const part = body.subarray(start, body.lastIndexOf('\r\n--'));
    expect([...part.subarray(0, 2)]).toEqual([0x1f, 0x8b]);
    expect(gunzipSync(part).toString()).toBe(csv);
    expect(polls.map((r) => r.url)).toEqual(Array(4).fill('/v1/jobs/job-1'));
  });

  it('bulk(): a 402 rejects with the quota fields and no job is polled', async () => {
    api.script({ status: 402, body: { type: '/problems/quota-exceeded', limit: 1000, used: 990, remaining: 10, resetsAt: '2026-12-01T00:00:00.000Z' } });
    const c = client();
    await expect(c.bulk([event(1), event(2)])).rejects.toMatchObject({ code: 'quota_exceeded', quota: { remaining: 10 } });
    expect(api.requests).toHaveLength(1);
    expect(api.requests[0]?.events.every((e) => UUID_V7.test(e.eventId))).toBe(true);
  });
});

describe('under continuous traffic', () => {
  it('flush() resolves once what was queued before it is sent, while track() keeps adding', async () => {
    api.slowBy(20);
    const c = client();
    for (let i = 0; i < 150; i++) await c.track(event(i));
    let stop = false;
    const producer = (async () => {
      for (let i = 0; !stop; i++) {
        await c.track(event(1_000 + i));
        if (i % 50 === 0) await new Promise((r) => setTimeout(r, 1));
      }
    })();
    await c.flush();
    stop = true;
    await producer;
    const sentIds = new Set(api.requests.flatMap((r) => r.events.map((e) => e.email)));
    for (let i = 0; i < 150; i++) expect(sentIds.has(`user${i}@example.com`)).toBe(true);
  });

  it('a callback that throws does not stop sending', async () => {
    api.script({ acceptExcept: { 0: 'invalid_format' } });
    const c = client({
      onRejected: () => {
        throw new Error('callback bug');
      },
    });
    for (let i = 0; i < 100; i++) await c.track(event(i));
    await c.flush();
    for (let i = 0; i < 100; i++) await c.track(event(i));
    await c.flush();
    expect(c.stats()).toMatchObject({ accepted: 199, rejected: 1 });
  });
});

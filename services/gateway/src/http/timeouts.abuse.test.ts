/**
 * Real servers: Kafka, Redis, ClickHouse; the gateway listening on a real port, attacked over
 * raw TCP connections. Stalled and slow clients: a body that stops arriving, headers that never
 * end, a body trickled below the idle timeout, an idle kept-alive connection. Each is cut within
 * its documented setting (here shortened: GATEWAY_*_TIMEOUT_MS below), answered 408 where HTTP
 * allows, its socket closed, and counted in ingest_http_timeouts_total.
 */
import type { JobMessage } from '@ingest/schemas';
import { sampleValue } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AbuseGateway, csvMultipart, startAbuseGateway } from '@ingest/testkit/gateway';
import { randomClientIp } from '@ingest/testkit/gateway';
import { withNeighbour } from '@ingest/testkit/gateway';
import { RawClient, rawBody } from '@ingest/testkit/gateway';

// As with the defaults (10 s and 15 s), the headers deadline (checked once a second) comes
// before the socket's idle timer, which would close a connection without a request unanswered.
const BODY_IDLE_MS = 2_500;
const HEADERS_MS = 1_000;
const REQUEST_MS = 5_000;
const KEEP_ALIVE_MS = 1_000;
/** Node checks the headers and request deadlines once a second; timers fire a little late. */
const SLACK_MS = 1_500;

let abuse: AbuseGateway;
let apiKey: string;
let accountId: string;

beforeAll(async () => {
  abuse = await startAbuseGateway({
    GATEWAY_BODY_IDLE_TIMEOUT_MS: String(BODY_IDLE_MS),
    KAFKA_SEND_TIMEOUT_MS: '1000',
    GATEWAY_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
    GATEWAY_REQUEST_TIMEOUT_MS: String(REQUEST_MS),
    GATEWAY_KEEP_ALIVE_TIMEOUT_MS: String(KEEP_ALIVE_MS),
  });
  ({
    apiKey,
    account: { id: accountId },
  } = await abuse.gw.newAccount('growth'));
});

afterAll(async () => {
  await abuse?.close();
});

async function timeouts(kind: 'body_idle' | 'request'): Promise<number> {
  return sampleValue(await abuse.gw.metrics.metrics(), 'ingest_http_timeouts_total', { kind }) ?? 0;
}

function head(path: string, contentType: string, contentLength: number): string {
  return (
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\nX-Forwarded-For: ${randomClientIp()}\r\n` +
    `Content-Type: ${contentType}\r\nContent-Length: ${contentLength}\r\n\r\n`
  );
}

describe('stalled and slow clients', () => {
  it('cuts 50 stalled JSON bodies with 408 within the body-idle timeout and closes them, while a neighbour is unharmed', async () => {
    const before = await timeouts('body_idle');
    const exchanges = await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      const clients = Array.from({ length: 50 }, () => new RawClient(abuse.port));
      await Promise.all(clients.map((c) => c.send(`${head('/v1/events', 'application/json', 1000)}{"events":[`)));
      return Promise.all(clients.map((c) => c.closed));
    });
    for (const exchange of exchanges) {
      expect(exchange.status, exchange.text).toBe(408);
      expect(rawBody(exchange.text)).toMatchObject({ type: '/problems/request-timeout', status: 408 });
      expect(exchange.text.toLowerCase()).toContain('connection: close');
      expect(exchange.closedAfterMs).toBeGreaterThanOrEqual(BODY_IDLE_MS - 100);
      expect(exchange.closedAfterMs).toBeLessThan(BODY_IDLE_MS + SLACK_MS);
    }
    expect((await timeouts('body_idle')) - before).toBe(50);
  });

  it('cuts a CSV upload that stalls halfway with 408 and aborts its job', async () => {
    const rows = Array.from({ length: 1200 }, (_, i) => `signup,2026-01-01T00:00:00Z,u${i}@b.io`).join('\n');
    const { body, contentType } = csvMultipart(`event_name,timestamp,email\n${rows}\n`);
    const exchange = await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      const client = new RawClient(abuse.port);
      // Half the file: one chunk of 500 rows is written to Kafka, then nothing more arrives.
      await client.send(Buffer.concat([Buffer.from(head('/v1/backfill/csv', contentType, body.length)), body.subarray(0, Math.floor(body.length / 2))]));
      return client.closed;
    });
    expect(exchange.status, exchange.text).toBe(408);
    expect(exchange.closedAfterMs).toBeLessThan(BODY_IDLE_MS + SLACK_MS);
    const { values } = await abuse.gw.readTopic<JobMessage>(
      'jobChunks',
      (v) => v.some((m) => m.accountId === accountId && m.type === 'aborted'),
      'the stalled upload aborted',
    );
    const job = values.filter((m) => m.accountId === accountId);
    expect(job.map((m) => m.type)).toEqual(['chunk', 'aborted']);
    expect(job[1]).toMatchObject({ type: 'aborted', reason: 'requestTimeout' });
  });

  it('answers headers that never end with 408 within the headers timeout', async () => {
    const before = await timeouts('request');
    const exchange = await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      const client = new RawClient(abuse.port);
      await client.send(`POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: `);
      return client.closed;
    });
    expect(exchange.status, exchange.text).toBe(408);
    expect(rawBody(exchange.text)).toMatchObject({ type: '/problems/request-timeout' });
    expect(exchange.closedAfterMs).toBeLessThan(HEADERS_MS + SLACK_MS);
    expect((await timeouts('request')) - before).toBe(1);
  });

  it('answers a body trickled just fast enough to stay under the idle timeout with 408 at the request timeout', async () => {
    const { exchange, tookMs } = await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      const client = new RawClient(abuse.port);
      const started = performance.now();
      await client.send(`${head('/v1/events', 'application/json', 10_000)}{"events":[`);
      // A byte every second: never idle for the body-idle timeout, but the request never completes.
      while (client.open && performance.now() - started < REQUEST_MS + 3 * SLACK_MS) {
        await new Promise((r) => setTimeout(r, 1_000));
        if (client.open) await client.send(' ').catch(() => undefined);
      }
      return { exchange: await client.closed, tookMs: performance.now() - started };
    });
    expect(exchange.status, exchange.text).toBe(408);
    expect(tookMs).toBeGreaterThanOrEqual(REQUEST_MS - 100);
    expect(tookMs).toBeLessThan(REQUEST_MS + SLACK_MS);
  });

  it('closes 50 idle kept-alive connections after the keep-alive timeout', async () => {
    const exchange = await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      // Many idle connections at once; each is closed after the keep-alive timeout.
      const clients = Array.from({ length: 50 }, () => new RawClient(abuse.port));
      await Promise.all(
        clients.map((c) =>
          c.send(`GET /v1/usage HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\nX-Forwarded-For: ${randomClientIp()}\r\n\r\n`),
        ),
      );
      const all = await Promise.all(clients.map((c) => c.closed));
      return all.reduce((slowest, e) => (e.closedAfterMs > slowest.closedAfterMs ? e : slowest));
    });
    expect(exchange.status, exchange.text).toBe(200);
    expect(exchange.closedAfterMs).toBeLessThan(KEEP_ALIVE_MS + SLACK_MS);
  });
});

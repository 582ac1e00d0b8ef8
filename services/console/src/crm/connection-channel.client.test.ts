import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ProblemError } from '@ingest/http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConnectionChannel } from './connection-channel.client.js';

/** A stand-in crm-sink over real HTTP: each test picks how it misbehaves by the credential name. */
let server: Server;
let url: string;
const TOKEN = 't'.repeat(40);
const seen: { authorization?: string }[] = [];

function answer(req: IncomingMessage, res: ServerResponse, name: string): void {
  if (name === 'slow') return void setTimeout(() => res.end('{}'), 5_000).unref();
  if (name === 'huge') {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const write = () => res.write(chunk) && !res.destroyed && setImmediate(write);
    res.on('drain', write);
    return void write();
  }
  if (name === 'limited')
    return void res
      .writeHead(429, { 'retry-after': '7', 'content-type': 'application/problem+json' })
      .end(JSON.stringify({ status: 429, detail: 'Too many connection checks for this account; try again in 7 s.' }));
  if (name === 'wrong-token') return void res.writeHead(401).end(JSON.stringify({ status: 401, detail: 'A valid CRM_SINK_INTERNAL_TOKEN is required.' }));
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ v: 1, ok: true, crm: 'hubspot', outcome: 'connected', message: 'fine', checkedAt: 'x' }));
}

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ authorization: req.headers.authorization });
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => answer(req, res, (JSON.parse(body) as { name: string }).name));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const channel = (options: { token?: string; timeoutMs?: number; maxAnswerBytes?: number } = {}) =>
  createConnectionChannel({ url, token: options.token ?? TOKEN, timeoutMs: options.timeoutMs ?? 2_000, maxAnswerBytes: options.maxAnswerBytes ?? 64 * 1024 });

async function problemOf(work: Promise<unknown>): Promise<ProblemError> {
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProblemError);
  return err as ProblemError;
}

describe("the console's client of the connection channel", () => {
  it('sends the bearer token and returns the answer', async () => {
    expect(await channel().test({ accountId: 'a', name: 'ok' })).toMatchObject({ ok: true, message: 'fine' });
    expect(seen.at(-1)?.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('answers 503 without asking when no token is configured', async () => {
    const before = seen.length;
    const c = channel({ token: '' });
    expect(c.available).toBe(false);
    expect((await problemOf(c.test({ accountId: 'a', name: 'ok' }))).kind).toBe('unavailable');
    expect(seen.length).toBe(before);
  });

  it('bounds a crm-sink that does not answer by the timeout, and one that answers without end by the cap', async () => {
    const started = Date.now();
    const slow = await problemOf(channel({ timeoutMs: 300 }).test({ accountId: 'a', name: 'slow' }));
    expect(slow.kind).toBe('unavailable');
    expect(slow.detail).toContain('did not answer');
    expect(Date.now() - started).toBeLessThan(2_000);
    const huge = await problemOf(channel().properties({ accountId: 'a', name: 'huge', object: 'contact' }));
    expect(huge.kind).toBe('unavailable');
    expect(huge.detail).toContain('more than the console reads');
  });

  it("passes the channel's 429 on with its Retry-After; a token mismatch is the operator's 503, not the owner's 401", async () => {
    const limited = await problemOf(channel().test({ accountId: 'a', name: 'limited' }));
    expect(limited.kind).toBe('rateLimited');
    expect(limited.headers['retry-after']).toBe('7');
    const wrong = await problemOf(channel().test({ accountId: 'a', name: 'wrong-token' }));
    expect(wrong.kind).toBe('unavailable');
  });
});

// Servers: small node:http servers on 127.0.0.1 (the "CRM"), over real HTTP; name resolution
// is a stub resolver, so a name can resolve to any address the test wants.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOutboundPolicy } from '@ingest/domain';
import { afterEach, describe, expect, it } from 'vitest';
import { CrmError } from './adapter.js';
import type { Resolve } from '@ingest/domain';
import { type CrmHttpClient, createCrmHttpClient } from './http.client.js';

interface TestServer {
  port: number;
  requests: number;
  server: Server;
}

const servers: Server[] = [];
const clients: CrmHttpClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, res) => res.end('{}')): Promise<TestServer> {
  const state = { port: 0, requests: 0 } as TestServer;
  state.server = createServer((req, res) => {
    state.requests += 1;
    handler(req, res);
  });
  servers.push(state.server);
  await new Promise<void>((r) => state.server.listen(0, '127.0.0.1', r));
  state.port = (state.server.address() as AddressInfo).port;
  return state;
}

/** Answers every name with the next address of `answers` (the last one repeats). */
function resolver(...answers: string[][]): Resolve & { calls: string[] } {
  const calls: string[] = [];
  const resolve = ((hostname, _options, callback) => {
    calls.push(hostname);
    const addresses = answers[Math.min(calls.length - 1, answers.length - 1)] ?? [];
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  }) as Resolve & { calls: string[] };
  resolve.calls = calls;
  return resolve;
}

function client(baseUrl: string, options: Partial<Parameters<typeof createCrmHttpClient>[0]> = {}): CrmHttpClient {
  const c = createCrmHttpClient({ crm: 'Webhook', baseUrl, secrets: ['whsec_never_logged'], ...options });
  clients.push(c);
  return c;
}

async function failure(promise: Promise<unknown>): Promise<CrmError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(CrmError);
  return err as CrmError;
}

const POST = { method: 'POST' as const, path: '', body: { type: 'records.upsert' } };
const httpOnly = createOutboundPolicy({ allowHttp: true });
const loopbackAllowed = createOutboundPolicy({ allowHttp: true, allowedCidrs: '127.0.0.1/32' });

describe('CRM HTTP client: the outbound address policy at connect time', () => {
  it('refuses a name that resolves to a private address, and connects when that address is allowlisted', async () => {
    const crm = await serve();
    const resolve = resolver(['127.0.0.1']);
    const refused = await failure(client(`http://hooks.example.test:${crm.port}/in`, { outboundPolicy: httpOnly, resolve }).send(POST));
    expect(refused.kind).toBe('forbidden');
    expect(refused.message).toMatch(/hooks\.example\.test resolved to 127\.0\.0\.1 is a loopback address/);
    expect(resolve.calls).toEqual(['hooks.example.test']);
    expect(crm.requests).toBe(0);

    // The same resolver and server with loopback allowlisted: the stub is what was dialled.
    await expect(client(`http://hooks.example.test:${crm.port}/in`, { outboundPolicy: loopbackAllowed, resolve }).send(POST)).resolves.toMatchObject({
      status: 200,
    });
    expect(crm.requests).toBe(1);
  });

  it('checks every new connection: a name that rebinds to another address after the first is refused', async () => {
    // Every answer closes the connection, so each request connects (and resolves) again.
    const crm = await serve((_q, res) => res.setHeader('connection', 'close').end('{}'));
    const resolve = resolver(['127.0.0.1'], ['169.254.169.254']);
    const c = client(`http://rebind.example.test:${crm.port}/in`, { outboundPolicy: loopbackAllowed, resolve });
    await expect(c.send(POST)).resolves.toMatchObject({ status: 200 });
    const refused = await failure(c.send(POST));
    expect(refused).toMatchObject({ kind: 'forbidden' });
    expect(refused.message).toMatch(/169\.254\.169\.254 is a link-local address/);
    expect(resolve.calls).toHaveLength(2);
    expect(crm.requests).toBe(1);
  });

  it('refuses a host when any of its addresses is refused', async () => {
    const crm = await serve();
    const resolve = resolver(['93.184.215.14', '10.0.0.8']);
    expect(await failure(client(`http://mixed.example.test:${crm.port}/`, { outboundPolicy: httpOnly, resolve }).send(POST))).toMatchObject({
      kind: 'forbidden',
    });
  });

  it.each([
    ['an IPv4 literal', (port: number) => `http://127.0.0.1:${port}/in`],
    ['an IPv4-mapped IPv6 literal', (port: number) => `http://[::ffff:127.0.0.1]:${port}/in`],
    ['a decimal IPv4 literal', (port: number) => `http://2130706433:${port}/in`],
  ])('refuses %s without resolving or connecting', async (_what, url) => {
    const crm = await serve();
    const resolve = resolver(['93.184.215.14']);
    const refused = await failure(client(url(crm.port), { outboundPolicy: httpOnly, resolve }).send(POST));
    expect(refused.kind).toBe('forbidden');
    expect(refused.message).toMatch(/loopback/);
    expect(resolve.calls).toEqual([]);
    expect(crm.requests).toBe(0);
  });

  it('refuses the metadata address and plain http under the default policy', async () => {
    expect(await failure(client('https://169.254.169.254/latest/meta-data/').send(POST))).toMatchObject({ kind: 'forbidden' });
    const http = await failure(client('http://hooks.example.test/in', { resolve: resolver(['93.184.215.14']) }).send(POST));
    expect(http.message).toMatch(/must use https, not http/);
  });
});

describe('CRM HTTP client: redirects, response size and time', () => {
  it('does not follow a redirect: the 3xx is a permanent failure and the target gets nothing', async () => {
    const inside = await serve();
    const crm = await serve((_q, res) => res.writeHead(302, { location: `http://127.0.0.1:${inside.port}/admin` }).end());
    const err = await failure(client(`http://127.0.0.1:${crm.port}/in`, { outboundPolicy: loopbackAllowed }).send(POST));
    expect(err).toMatchObject({ kind: 'permanent', status: 302 });
    expect(inside.requests).toBe(0);
  });

  it('stops reading an answer larger than the cap, declared or not', async () => {
    const big = 'x'.repeat(64 * 1024);
    const declared = await serve((_q, res) => res.writeHead(200, { 'content-length': String(100 * 1024 * 1024) }).write(big));
    const chunked = await serve((_q, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // Chunked: the size is only known by counting. Written until the client goes away.
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(big)), 1);
      res.on('close', () => clearInterval(timer));
    });
    for (const crm of [declared, chunked]) {
      const err = await failure(client(`http://127.0.0.1:${crm.port}/in`, { outboundPolicy: loopbackAllowed, maxResponseBytes: 256 * 1024 }).send(POST));
      expect(err.kind).toBe('transient');
      expect(err.message).toMatch(/body over 262144 bytes; not read/);
    }
  });

  it('ends a call that trickles bytes under the idle timeout at the whole-call timeout', async () => {
    const crm = await serve((_q, res) => {
      res.writeHead(200);
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 20);
      res.on('close', () => clearInterval(timer));
    });
    const started = performance.now();
    const err = await failure(
      client(`http://127.0.0.1:${crm.port}/in`, { outboundPolicy: loopbackAllowed, bodyTimeoutMs: 5_000, requestTimeoutMs: 300 }).send(POST),
    );
    expect(err.kind).toBe('transient');
    expect(performance.now() - started).toBeLessThan(3_000);
  });
});

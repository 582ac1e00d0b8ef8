// Servers: a node:http server on 127.0.0.1 (the "CRM") that accepts one bearer token at a time,
// over real HTTP; the bearer source is a stub counting its calls.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createOutboundPolicy } from '@ingest/domain';
import { afterEach, describe, expect, it } from 'vitest';
import { CrmError } from './adapter.js';
import { type BearerSource, type CrmHttpClient, createCrmHttpClient } from './http.client.js';

const policy = createOutboundPolicy({ allowHttp: true, allowedCidrs: '127.0.0.1/32' });
const servers: Server[] = [];
const clients: CrmHttpClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A CRM that accepts `valid.token` only and records the authorization headers it saw. */
async function crm(valid: { token: string }) {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(req.headers.authorization ?? '');
    res.setHeader('content-type', 'application/json');
    if (req.headers.authorization !== `Bearer ${valid.token}`) {
      res.statusCode = 401;
      res.end(JSON.stringify({ message: `token ${req.headers.authorization} expired` }));
      return;
    }
    res.end('{"ok":true}');
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { seen, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

function bearer(first: string, next: () => string): BearerSource & { refreshed: string[] } {
  let current = first;
  const refreshed: string[] = [];
  return {
    refreshed,
    token: async () => current,
    refreshAfterUnauthorized: async (rejected) => {
      refreshed.push(rejected);
      current = next();
      return current;
    },
  };
}

function client(url: string, source: BearerSource): CrmHttpClient {
  const c = createCrmHttpClient({
    crm: 'Test',
    baseUrl: url,
    headers: { authorization: 'Bearer static' },
    secrets: [],
    outboundPolicy: policy,
    bearer: source,
  });
  clients.push(c);
  return c;
}

describe('CRM HTTP client with a bearer source (OAuth credentials)', () => {
  it('sends the source token instead of the static header', async () => {
    const server = await crm({ token: 'at-1' });
    const response = await client(
      server.url,
      bearer('at-1', () => 'never'),
    ).send({ method: 'GET', path: '/x' });
    expect(response.body).toEqual({ ok: true });
    expect(server.seen).toEqual(['Bearer at-1']);
  });

  it('on a 401 asks for a fresh token once, naming the rejected one, and sends the call again with it', async () => {
    const valid = { token: 'at-2' };
    const server = await crm(valid);
    const source = bearer('at-1', () => 'at-2');
    const response = await client(server.url, source).send({ method: 'POST', path: '/x', body: { a: 1 } });
    expect(response.status).toBe(200);
    expect(source.refreshed).toEqual(['at-1']);
    expect(server.seen).toEqual(['Bearer at-1', 'Bearer at-2']);
  });

  it('a second 401 with the fresh token is an auth failure (no loop), and no token appears in its message', async () => {
    const server = await crm({ token: 'nothing-valid' });
    const source = bearer('at-secret-1', () => 'at-secret-2');
    const failure = await client(server.url, source)
      .send({ method: 'GET', path: '/x' })
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(CrmError);
    expect(failure).toMatchObject({ kind: 'auth', status: 401 });
    expect((failure as Error).message).not.toMatch(/at-secret/);
    expect(source.refreshed).toEqual(['at-secret-1']);
    expect(server.seen).toHaveLength(2);
  });

  it('a source that cannot give a token fails the call before anything is sent', async () => {
    const server = await crm({ token: 'x' });
    const failing: BearerSource = {
      token: async () => {
        throw new CrmError('transient', 'token endpoint unavailable');
      },
      refreshAfterUnauthorized: async () => 'x',
    };
    await expect(client(server.url, failing).send({ method: 'GET', path: '/x' })).rejects.toMatchObject({ kind: 'transient' });
    expect(server.seen).toEqual([]);
  });
});

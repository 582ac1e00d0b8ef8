/**
 * The HTTP of OAuth token and revocation calls (crm-sink's refreshes and the console's code
 * exchange), against a local HTTP server: the outbound policy is applied to the address a name
 * resolves to (a token URL whose name points at a refused address makes no request), and an
 * answer over 64 KiB is not read.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutboundPolicy } from '../outbound-policy.js';
import { createTokenHttp } from './token-http.js';

let server: Server;
let port: number;
const requests: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(req.url ?? '');
    res.setHeader('content-type', 'application/json');
    if (req.url === '/huge') res.end(JSON.stringify({ access_token: 'x'.repeat(100 * 1024) }));
    else res.end(JSON.stringify({ access_token: 'tok', expires_in: 1800 }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const loopbackAllowed = createOutboundPolicy({ allowHttp: true, allowedCidrs: '127.0.0.1/32' });

describe('token HTTP', () => {
  it('sends the form and reads the JSON answer', async () => {
    const http = createTokenHttp({ policy: loopbackAllowed, timeoutMs: 5_000 });
    try {
      const answer = await http.send({ method: 'POST', url: `http://127.0.0.1:${port}/token`, form: { grant_type: 'refresh_token' } });
      expect(answer).toEqual({ status: 200, body: { access_token: 'tok', expires_in: 1800 } });
    } finally {
      await http.close();
    }
  });

  it('refuses a name that resolves to an address the policy refuses, before any request', async () => {
    const before = requests.length;
    // Loopback is not allowed here; the name passes the URL check and resolves to 127.0.0.1.
    const http = createTokenHttp({
      policy: createOutboundPolicy({ allowHttp: true, allowedCidrs: '' }),
      timeoutMs: 5_000,
      resolve: (_host, _options, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }]),
    });
    try {
      const sent = http.send({ method: 'POST', url: `http://token.crm.example:${port}/token`, form: { grant_type: 'authorization_code' } });
      await expect(sent).rejects.toMatchObject({ code: 'ERR_CRM_ADDRESS_NOT_ALLOWED' });
      expect(requests.length).toBe(before);
    } finally {
      await http.close();
    }
  });

  it('does not read an answer over 64 KiB', async () => {
    const http = createTokenHttp({ policy: loopbackAllowed, timeoutMs: 5_000 });
    try {
      await expect(http.send({ method: 'POST', url: `http://127.0.0.1:${port}/huge`, form: {} })).rejects.toThrow(/more than 65536 bytes/);
    } finally {
      await http.close();
    }
  });
});

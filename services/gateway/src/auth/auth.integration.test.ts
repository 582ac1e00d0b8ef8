/**
 * Real servers: Kafka and Redis. A key revoked through one gateway replica's admin API is
 * refused by another replica within 5 seconds; the client address used for rate limiting is
 * the socket's unless a trusted proxy is configured.
 */
import { waitFor } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createGatewayFixture, useGatewayFixture, randomClientIp } from '@ingest/testkit/gateway';

const gw = useGatewayFixture();

describe('API keys across replicas', () => {
  it('a key created on one replica works on another, and once revoked there it is refused everywhere within 5 s', async () => {
    const replica = await gw.replica();
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const account = (
      await gw.admin.inject({
        method: 'POST',
        url: '/admin/v1/accounts',
        headers: admin,
        payload: { name: 'Replica Co', plan: 'pro' },
        remoteAddress: randomClientIp(),
      })
    ).json();
    const created = (
      await gw.admin.inject({
        method: 'POST',
        url: `/admin/v1/accounts/${account.id}/keys`,
        headers: admin,
        payload: { name: 'k' },
        remoteAddress: randomClientIp(),
      })
    ).json();
    const usage = () =>
      replica.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${created.apiKey}` }, remoteAddress: randomClientIp() });

    await waitFor(async () => (await usage()).statusCode === 200 || undefined, { description: 'the new key accepted by the replica', timeoutMs: 5_000 });

    const revoked = await gw.admin.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${account.id}/keys/${created.key.id}/revoke`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      remoteAddress: randomClientIp(),
    });
    expect(revoked.statusCode).toBe(200);
    await waitFor(async () => (await usage()).statusCode === 401 || undefined, { description: 'the revoked key refused by the replica', timeoutMs: 5_000 });
  });
});

describe('client address', () => {
  it('ignores X-Forwarded-For by default, so a client cannot escape the rate limit by forging it', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const ip = randomClientIp();
    for (let i = 0; i < 120; i++) {
      await gw.app.inject({
        method: 'GET',
        url: '/v1/usage',
        headers: { authorization: `Bearer ${apiKey}`, 'x-forwarded-for': randomClientIp() },
        remoteAddress: ip,
      });
    }
    const forged = await gw.app.inject({
      method: 'GET',
      url: '/v1/usage',
      headers: { authorization: `Bearer ${apiKey}`, 'x-forwarded-for': randomClientIp() },
      remoteAddress: ip,
    });
    expect(forged.statusCode).toBe(429);
  });

  it('uses X-Forwarded-For from a configured trusted proxy', async () => {
    const proxied = await createGatewayFixture({ GATEWAY_TRUST_PROXY: '127.0.0.1' });
    try {
      const { apiKey } = await proxied.newAccount('pro');
      const client = randomClientIp();
      const viaProxy = (xff: string) =>
        proxied.app.inject({
          method: 'GET',
          url: '/v1/usage',
          headers: { authorization: `Bearer ${apiKey}`, 'x-forwarded-for': xff },
          remoteAddress: '127.0.0.1',
        });
      for (let i = 0; i < 120; i++) expect((await viaProxy(client)).statusCode).toBe(200);
      expect((await viaProxy(client)).statusCode).toBe(429);
      // Another client behind the same proxy has its own budget.
      expect((await viaProxy(randomClientIp())).statusCode).toBe(200);
    } finally {
      await proxied.close();
    }
  });
});

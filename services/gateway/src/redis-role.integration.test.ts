/**
 * Real servers: Kafka, and a redis-server of the test's own with the role users (redis-acl.ts).
 * The gateway's request paths under the gateway's Redis user, as deployed: the per-address and
 * per-account limits, the allowance, an idempotent bulk job and its status, usage. A grant
 * missing for any of them would answer 503 here (or log an ACL refusal), not pass.
 */
import { connectRedis, createRedis } from '@ingest/platform';
import { type RedisWithRoles, startRedisWithRoles } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let own: RedisWithRoles;
let gw: GatewayFixture;

beforeAll(async () => {
  own = await startRedisWithRoles();
  gw = await createGatewayFixture({ REDIS_URL: own.roleUrls.gateway });
});

afterAll(async () => {
  await gw?.close();
  await own?.close();
});

describe('the gateway under its own Redis user', () => {
  it('takes events and a bulk job, answers a retry from its idempotency record, and reports usage and the job', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const single = await gw.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers,
      payload: JSON.stringify({ events: [{ eventName: 'a', email: 'a@b.io', eventId: 'e-1' }] }),
      remoteAddress: randomClientIp(),
    });
    expect(single.statusCode, single.body).toBe(202);
    expect(single.headers['ratelimit-policy'], 'the per-address and per-account limits ran').toBeDefined();

    const body = JSON.stringify({ events: [{ eventName: 'b', email: 'b@b.io' }] });
    const first = await gw.app.inject({
      method: 'POST',
      url: '/v1/events/bulk',
      headers: { ...headers, 'idempotency-key': 'role-k1' },
      payload: body,
      remoteAddress: randomClientIp(),
    });
    expect(first.statusCode, first.body).toBe(202);
    const retry = await gw.app.inject({
      method: 'POST',
      url: '/v1/events/bulk',
      headers: { ...headers, 'idempotency-key': 'role-k1' },
      payload: body,
      remoteAddress: randomClientIp(),
    });
    expect(retry.json<{ jobId: string }>().jobId).toBe(first.json<{ jobId: string }>().jobId);

    const job = await gw.app.inject({
      method: 'GET',
      url: `/v1/jobs/${first.json<{ jobId: string }>().jobId}`,
      headers: { authorization: `Bearer ${apiKey}` },
      remoteAddress: randomClientIp(),
    });
    expect(job.statusCode, job.body).toBe(200);
    const usage = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() });
    expect(usage.statusCode, usage.body).toBe(200);
    expect(usage.json<{ used: number }>().used).toBeGreaterThanOrEqual(2);

    // Each family was written under the gateway's user: a limiter that failed open for want of a
    // grant would have answered 202 all the same, but left no key.
    const admin = createRedis({ url: own.url });
    await connectRedis(admin);
    try {
      const families = new Set((await admin.keys('*')).map((k) => k.split(/[:{]/)[0]));
      expect([...families].sort()).toEqual(expect.arrayContaining(['acctrate', 'idem', 'job', 'jobs', 'quota', 'ratelimit']));
    } finally {
      await admin.close();
    }
  });
});

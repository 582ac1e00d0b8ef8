/**
 * Real servers: Kafka, and a redis-server of the test's own with the role users (redis-acl.ts).
 * The console's dashboard paths under the console's Redis user, as deployed: sign-in (its
 * throttle and the session), the keys page with its last use, the job list, the sync health
 * page, sign-out. A grant missing for any of them answers 503 here.
 */
import { connectRedis, createRedis } from '@ingest/platform';
import { type RedisWithRoles, startRedisWithRoles } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, signedInOwner } from '@ingest/testkit/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let own: RedisWithRoles;
let gw: GatewayFixture;

beforeAll(async () => {
  own = await startRedisWithRoles();
  // The fixture's one Redis client serves its console (and its gateway, unused here) as the console's user.
  gw = await createGatewayFixture({ REDIS_URL: own.roleUrls.console });
});

afterAll(async () => {
  await gw?.close();
  await own?.close();
});

describe('the console under its own Redis user', () => {
  it('signs in, lists keys and jobs, shows sync health, signs out', async () => {
    const { account } = await gw.newAccount('pro');
    const user = await signedInOwner(gw, account.id);
    const keys = await user.request({ method: 'GET', url: '/dashboard/api/keys' });
    expect(keys.statusCode, keys.body).toBe(200);
    const health = await user.request({ method: 'GET', url: '/dashboard/api/sync-health' });
    expect(health.statusCode, health.body).toBe(200);
    const jobs = await user.request({ method: 'GET', url: '/dashboard/api/jobs' });
    expect(jobs.statusCode, jobs.body).toBe(200);
    const out = await user.request({ method: 'DELETE', url: '/dashboard/api/session' });
    expect(out.statusCode, out.body).toBeLessThan(300);
    expect((await user.request({ method: 'GET', url: '/dashboard/api/keys' })).statusCode).toBe(401);

    const admin = createRedis({ url: own.url });
    await connectRedis(admin);
    try {
      // The throttle and the per-address limiter counted under the console's user.
      const keys = await admin.keys('*');
      expect(
        keys.some((k) => k.startsWith('dashboard:signin:')),
        keys.join(' '),
      ).toBe(true);
      expect(
        keys.some((k) => k.startsWith('ratelimit:')),
        keys.join(' '),
      ).toBe(true);
    } finally {
      await admin.close();
    }
  });
});

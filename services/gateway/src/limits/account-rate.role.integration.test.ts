/**
 * The per-account ceilings' script under the gateway's Redis user (redis-acl.ts), on a
 * redis-server of the test's own with the role users: its GET/SET/TIME calls are granted on
 * `acctrate:*` keys, and no other role can run it.
 */
import { type Redis, type RedisRole } from '@ingest/platform';
import { type RedisWithRoles, startRedisWithRoles } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AccountRateLimits, createAccountRateLimiter } from './account-rate.limiter.js';

const LIMITS: AccountRateLimits = {
  requestsPerSecond: { free: 1, pro: 10, growth: 10 },
  eventsPerSecond: { free: 10, pro: 100, growth: 100 },
  burstSeconds: 1,
};
let own: RedisWithRoles;
const as = (role: RedisRole): Promise<Redis> => own.connectAs(role);

beforeAll(async () => {
  own = await startRedisWithRoles();
});

afterAll(async () => {
  await own?.close();
});

describe('per-account ceilings under the gateway’s Redis user', () => {
  it('admits, then refuses past the ceiling; the console and crm-sink cannot touch the counters', async () => {
    const admit = createAccountRateLimiter({ redis: await as('gateway'), keyPrefix: '', limits: LIMITS });
    const account = { id: 'acc_rate', plan: 'free' as const };
    expect((await admit(account, 1)).allowed).toBe(true);
    expect((await admit(account, 1)).allowed).toBe(false);
    for (const role of ['console', 'crm-sink'] as const) {
      const other = createAccountRateLimiter({ redis: await as(role), keyPrefix: '', limits: LIMITS });
      await expect(other(account, 1)).rejects.toThrow(/NOPERM|can't/);
    }
  });
});

/**
 * POST /v1/events's one Redis call (admission.ts) on a redis-server of the test's own with the
 * role users: the per-account ceilings and the allowance in one script under the gateway's user,
 * with the same answers as the two calls it replaces; a refused request charged nothing; and,
 * under a gateway user set up by an older release (no grant for one script over both key
 * families), the two calls as before instead of an error.
 */
import { createHash } from 'node:crypto';
import { createAllowance } from '@ingest/domain';
import { createMetricsRegistry, createRedis, METRIC_NAMES, type Redis, redisAclRules, type Registry } from '@ingest/platform';
import { type RedisWithRoles, startRedisWithRoles } from '@ingest/testkit';
import type { FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountAdmission, type AccountRateLimits, createAccountRateLimiter } from './account-rate.limiter.js';
import { createEventsAdmission } from './admission.js';

const LIMITS: AccountRateLimits = {
  requestsPerSecond: { free: 2, pro: 10, growth: 10 },
  eventsPerSecond: { free: 100, pro: 100, growth: 100 },
  burstSeconds: 1,
};
let own: RedisWithRoles;
const opened: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  own = await startRedisWithRoles();
});

afterAll(async () => {
  for (const r of opened) await r.close();
  await own?.close();
});

function timedClient(url: string): { redis: Redis; registry: Registry } {
  const registry = createMetricsRegistry('test');
  const redis = createRedis({ url, metrics: registry });
  opened.push(redis);
  return { redis, registry };
}

function setUp(redis: Redis, registry: Registry) {
  const allowance = createAllowance({ redis, seenIdsKey: Buffer.alloc(32, 1) });
  const limiter = createAccountRateLimiter({ redis, keyPrefix: '', limits: LIMITS });
  const admission = createEventsAdmission({
    redis,
    keyPrefix: '',
    limits: LIMITS,
    allowance,
    admission: accountAdmission(limiter, { failOpen: true, metrics: registry }),
  });
  return { allowance, admission };
}

/** What the hooks have set on a POST /v1/events by the time its handler runs. */
function requestOf(account: { id: string; plan: 'free' }, events: number): FastifyRequest {
  return {
    auth: { account },
    body: { events: Array.from({ length: events }, () => ({})) },
    routeOptions: { config: { countsEvents: true, admitsWithAllowance: true } },
    log: { debug: () => undefined },
  } as unknown as FastifyRequest;
}

/** Calls by `command/script` in ingest_redis_command_duration_seconds. */
async function calls(registry: Registry): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await registry.getSingleMetric(METRIC_NAMES.redisCommandDuration)?.get())?.values ?? []) {
    if ((v as { metricName?: string }).metricName?.endsWith('_count')) out[`${v.labels.command}/${v.labels.script}`] = v.value;
  }
  return out;
}

function account(id: string) {
  return { id, name: id, plan: 'free' as const, createdAt: '', updatedAt: '' };
}

describe('POST /v1/events: the per-account ceilings and the allowance in one Redis call', () => {
  it('answers as the two calls did, in one round trip, and charges a refused request nothing', async () => {
    const { redis, registry } = timedClient(own.roleUrls.gateway);
    const { allowance, admission } = setUp(redis, registry);
    const acc = account('acc_admit');
    const at = Date.now();

    const first = requestOf(acc, 3);
    const a = await admission.admitAndReserve(first, acc, ['a', 'b', 'a'], at);
    expect(a.decisions).toEqual(['counted', 'counted', 'repeat']);
    expect(a.state.used).toBe(2);
    expect(first.accountRate?.refused).toBe(false);
    expect(first.accountRate?.items.map((i) => [i.name, i.remaining])).toEqual([
      ['account_requests', 1],
      ['account_events', 97],
    ]);

    const b = await admission.admitAndReserve(requestOf(acc, 2), acc, ['a', 'c'], at);
    expect(b.decisions).toEqual(['repeat', 'counted']);

    // The third request within the second is over the 2 requests a second: 429, nothing counted.
    const third = requestOf(acc, 1);
    await expect(admission.admitAndReserve(third, acc, ['d'], at)).rejects.toThrow(/over its 2 requests a second/);
    expect(third.accountRate?.refused).toBe(true);
    expect((await allowance.state(acc)).used).toBe(3);

    const seen = await calls(registry);
    expect(seen, JSON.stringify(seen)).toMatchObject({ 'evalsha/admit_and_reserve_events': 3 });
    expect(Object.keys(seen).filter((k) => k.startsWith('evalsha/') && k !== 'evalsha/admit_and_reserve_events')).toEqual([]);
  });

  it('falls back to the two calls under a gateway user without the grant for both families (set up by an older release)', async () => {
    const password = 'older-gateway-password';
    const rules = redisAclRules('gateway', { passwordSha256: createHash('sha256').update(password).digest('hex') }).filter(
      (rule) => !(rule.includes('~quota:*') && rule.includes('~acctrate:*')),
    );
    const admin = createRedis({ url: own.url });
    opened.push(admin);
    await admin.call('ACL', 'SETUSER', 'gateway-older', ...rules);

    const url = new URL(own.url);
    url.username = 'gateway-older';
    url.password = password;
    const { redis, registry } = timedClient(url.toString());
    const { admission } = setUp(redis, registry);
    const acc = account('acc_older');
    const request = requestOf(acc, 2);
    const answer = await admission.admitAndReserve(request, acc, ['x', 'x'], Date.now());
    expect(answer.decisions).toEqual(['counted', 'repeat']);
    expect(request.accountRate?.refused).toBe(false);
    const seen = await calls(registry);
    expect(seen, JSON.stringify(seen)).toMatchObject({
      'evalsha/admit_and_reserve_events': 1,
      'evalsha/account_rate_limits': 1,
      'evalsha/allowance_reserve_events': 1,
    });
  });
});

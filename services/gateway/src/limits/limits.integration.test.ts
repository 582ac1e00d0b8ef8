/**
 * Real servers: Kafka and Redis. The monthly allowance (402, partial acceptance, repeats are
 * free, quota headers) and the per-IP rate limit, both shared by every gateway replica.
 */
import { type Account, allowancePeriod } from '@ingest/domain';
import { describe, expect, it } from 'vitest';
import { useGatewayFixture, randomClientIp } from '@ingest/testkit/gateway';

const gw = useGatewayFixture();

const nextIp = randomClientIp;

function send(apiKey: string, events: unknown[], ip = nextIp()) {
  return gw.app.inject({
    method: 'POST',
    url: '/v1/events',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    payload: { events },
    remoteAddress: ip,
  });
}

async function setUsed(account: Account, used: number): Promise<void> {
  await gw.redis.set(`quota:{${account.id}}:${allowancePeriod(Date.now()).id}`, used);
}

const event = (eventId: string) => ({ eventName: 'Used Feature', email: 'a@b.io', eventId });

describe('monthly allowance', () => {
  it('accepts what fits, rejects the rest per event, then answers 402', async () => {
    const { account, apiKey } = await gw.newAccount('free');
    await setUsed(account, 998);
    const partial = await send(apiKey, [event('q-1'), event('q-2'), event('q-3')]);
    expect(partial.statusCode).toBe(202);
    expect(partial.json()).toMatchObject({
      accepted: 2,
      rejected: 1,
      eventIds: ['q-1', 'q-2'],
      errors: [{ index: 2, eventId: 'q-3', field: '/events/2', code: 'quota_exceeded' }],
    });
    expect(partial.headers['x-quota-limit']).toBe('1000');
    expect(partial.headers['x-quota-remaining']).toBe('0');

    const refused = await send(apiKey, [event('q-4')]);
    expect(refused.statusCode).toBe(402);
    const period = allowancePeriod(Date.now());
    expect(refused.json()).toMatchObject({
      type: '/problems/quota-exceeded',
      status: 402,
      limit: 1000,
      used: 1000,
      remaining: 0,
      resetsAt: period.end.toISOString(),
    });
    expect(refused.headers['x-quota-reset']).toBe(period.end.toISOString());
  });

  it('does not count a repeated eventId again, even when the allowance is used up', async () => {
    const { account, apiKey } = await gw.newAccount('free');
    await setUsed(account, 999);
    expect((await send(apiKey, [event('r-1'), event('r-1')])).json()).toMatchObject({ accepted: 2, rejected: 0, eventIds: ['r-1', 'r-1'] });
    const retry = await send(apiKey, [event('r-1')]);
    expect(retry.statusCode).toBe(202);
    expect(retry.headers['x-quota-remaining']).toBe('0');
    const usage = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: nextIp() });
    expect(usage.json()).toMatchObject({ plan: 'free', limit: 1000, used: 1000, remaining: 0 });
  });

  it('is one allowance across replicas: concurrent requests never exceed it', async () => {
    const { account, apiKey } = await gw.newAccount('free');
    await setUsed(account, 950);
    const replica = await gw.replica();
    const batches = Array.from({ length: 10 }, (_, b) => Array.from({ length: 10 }, (_, i) => event(`c-${b}-${i}`)));
    const responses = await Promise.all(
      batches.map((events, b) =>
        (b % 2 === 0 ? gw.app : replica).inject({
          method: 'POST',
          url: '/v1/events',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          payload: { events },
          remoteAddress: nextIp(),
        }),
      ),
    );
    const accepted = responses.reduce((sum, r) => sum + (r.statusCode === 202 ? r.json().accepted : 0), 0);
    expect(accepted).toBe(50);
    expect(responses.every((r) => r.statusCode === 202 || r.statusCode === 402)).toBe(true);
  });

  it('refuses a bulk job larger than what remains with 402 and queues nothing', async () => {
    const { account, apiKey } = await gw.newAccount('free');
    await setUsed(account, 990);
    const res = await gw.app.inject({
      method: 'POST',
      url: '/v1/events/bulk',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      payload: { events: Array.from({ length: 11 }, (_, i) => event(`b-${i}`)) },
      remoteAddress: nextIp(),
    });
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({ remaining: 10, used: 990, limit: 1000 });
    const usage = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: nextIp() });
    expect(usage.json().used).toBe(990);
  });
});

describe('rate limit', () => {
  it('allows 120 requests per minute per address across replicas, then 429 with Retry-After', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const replica = await gw.replica();
    const ip = randomClientIp();
    const usage = (app: typeof replica) => app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: ip });
    let last: Awaited<ReturnType<typeof usage>> | undefined;
    for (let i = 0; i < 120; i++) {
      last = await usage(i % 2 === 0 ? gw.app : replica);
      expect(last.statusCode).toBe(200);
    }
    expect(last?.headers['ratelimit-limit']).toBe('120');
    expect(last?.headers['ratelimit-remaining']).toBe('0');
    const refused = await usage(gw.app);
    expect(refused.statusCode).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['ratelimit-reset']).toBeDefined();
    expect(refused.json()).toMatchObject({ type: '/problems/rate-limited', status: 429, limit: 'ip', requestId: refused.headers['x-request-id'] });
    // The IETF draft's fields name the per-address policy (the account's ceilings were not reached).
    expect(refused.headers['ratelimit-policy']).toBe('"ip";q=120;w=60');
    expect(refused.headers['ratelimit']).toMatch(/^"ip";r=0;t=\d+$/);
    // Unknown routes count too, and another address is unaffected.
    expect((await gw.app.inject({ method: 'GET', url: '/nope', remoteAddress: ip })).statusCode).toBe(429);
    const other = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() });
    expect(other.statusCode).toBe(200);
  });
});

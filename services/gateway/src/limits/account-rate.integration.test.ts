/**
 * Real servers: Kafka, Redis, ClickHouse; two gateway replicas listening on loopback ports. The
 * per-account ceilings (docs/limits.md, "Per-account rate limits"): one account's traffic from
 * 40 source addresses (127.0.0.2-41: Linux lets a client bind any 127.0.0.0/8 address, so the
 * per-address limit of 120/min is never reached) is refused by its account's ceiling, across
 * both replicas, while another account is served; events count, not requests (on /v1/events; a
 * bulk job is one request); a request over a per-request maximum is its 400 even when the
 * ceilings are spent; and the Redis script agrees with the reference arithmetic.
 */
import { request as httpRequest } from 'node:http';
import { randomUUID } from 'node:crypto';
import { allowancePeriod } from '@ingest/domain';
import { redisScript } from '@ingest/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type EventRecord, type GatewayFixture } from '@ingest/testkit/gateway';
import { ADMIT_ACCOUNT_REQUEST } from './account-rate.script.js';
import { admit, gcraParams, type RatePolicy } from './account-rate.window.js';

/** Small ceilings: 10 requests and 100 events per bucket, refilling slowly (1 request, 10 events a second). */
const LIMITS = {
  ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_PRO: '1',
  ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_PRO: '10',
  ACCOUNT_RATE_LIMIT_BURST_SECONDS: '10',
};
const REQUEST_BUCKET = 10;

let gw: GatewayFixture;
let urls: string[];

beforeAll(async () => {
  gw = await createGatewayFixture(LIMITS);
  const replica = await gw.replica();
  urls = [await gw.app.listen({ host: '127.0.0.1', port: 0 }), await replica.listen({ host: '127.0.0.1', port: 0 })];
});

afterAll(async () => {
  await gw?.close();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: () => Record<string, unknown>;
}

/** One request on its own socket, from `localAddress`. */
function send(url: string, options: { apiKey: string; localAddress: string; method?: string; path?: string; body?: unknown }): Promise<Answer> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}${options.path ?? '/v1/events'}`,
      {
        method: options.method ?? 'POST',
        localAddress: options.localAddress,
        agent: false,
        headers: { authorization: `Bearer ${options.apiKey}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) as Record<string, unknown> });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const address = (i: number) => `127.0.0.${2 + (i % 40)}`;
const events = (n: number, tag: string) => ({
  events: Array.from({ length: n }, (_, i) => ({ eventName: 'Rate Test', email: 'a@b.io', eventId: `${tag}-${i}` })),
});
const describeAnswers = (answers: Answer[]) => answers.map((a) => `${a.status} ${a.body.slice(0, 160)}`).join('\n');

describe('per-account ceilings', () => {
  it('refuses one account flooding from 40 addresses across two replicas, while another account is served', async () => {
    const flooder = await gw.newAccount('pro');
    const other = await gw.newAccount('pro');
    const started = performance.now();
    // 40 requests, one per address, alternating between the replicas; the other account sends
    // 3 requests at the same moment from the same addresses and gateways.
    const [flood, neighbour] = await Promise.all([
      Promise.all(
        Array.from({ length: 40 }, (_, i) => send(urls[i % 2] ?? '', { apiKey: flooder.apiKey, localAddress: address(i), body: events(1, `f${i}`) })),
      ),
      Promise.all(Array.from({ length: 3 }, (_, i) => send(urls[i % 2] ?? '', { apiKey: other.apiKey, localAddress: address(i), body: events(1, `n${i}`) }))),
    ]);
    const elapsedS = (performance.now() - started) / 1000;
    const seen = `after ${elapsedS.toFixed(2)} s:\n${describeAnswers(flood)}`;

    const accepted = flood.filter((a) => a.status === 202);
    const refused = flood.filter((a) => a.status === 429);
    expect(accepted.length + refused.length, seen).toBe(40);
    // Shared by both replicas: one bucket of 10 (plus what refilled at 1/s), not 10 per replica.
    expect(accepted.length, seen).toBeGreaterThanOrEqual(REQUEST_BUCKET);
    expect(accepted.length, seen).toBeLessThanOrEqual(REQUEST_BUCKET + Math.ceil(elapsedS) + 1);
    expect(accepted.length, seen).toBeLessThan(2 * REQUEST_BUCKET);
    // Every refusal is the account's, never the per-address limit's.
    for (const r of refused) expect(r.json(), seen).toMatchObject({ limit: 'account_requests' });
    expect(
      neighbour.map((a) => a.status),
      describeAnswers(neighbour),
    ).toEqual([202, 202, 202]);

    // The refusal: bounded problem+json naming the limit, Retry-After, and the draft's fields.
    const refusal = refused[0] as Answer;
    expect(refusal.headers['content-type']).toContain('application/problem+json');
    expect(refusal.body.length).toBeLessThan(1024);
    expect(refusal.json()).toMatchObject({
      type: '/problems/rate-limited',
      status: 429,
      limit: 'account_requests',
      detail: expect.stringContaining('1 requests a second'),
      requestId: expect.any(String),
    });
    const retryAfter = Number(refusal.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(refusal.headers['ratelimit-policy']).toBe('"account_requests";q=10;w=10');
    expect(refusal.headers['ratelimit']).toBe(`"account_requests";r=0;t=${retryAfter}`);

    // An admitted request names every policy that applied, the per-address one first.
    const ok = accepted[0] as Answer;
    expect(ok.headers['ratelimit-policy']).toBe('"ip";q=120;w=60, "account_requests";q=10;w=10, "account_events";q=100;w=10;qu="events"');
    expect(ok.headers['ratelimit']).toMatch(/^"ip";r=\d+;t=\d+, "account_requests";r=\d+;t=\d+, "account_events";r=\d+;t=\d+$/);
    // The spec's per-address headers are still there.
    expect(ok.headers['ratelimit-limit']).toBe('120');

    // Refused requests were not counted against the allowance.
    const counter = await gw.redis.get(`quota:{${flooder.account.id}}:${allowancePeriod(Date.now()).id}`);
    expect(Number(counter), seen).toBe(accepted.length);
  });

  it('counts events, not requests, against the events ceiling; a refused batch neither counts nor reaches Kafka', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const url = urls[0] ?? '';
    const tag = randomUUID();
    const first = await send(url, { apiKey, localAddress: address(1), body: events(90, `${tag}-a`) });
    const second = await send(url, { apiKey, localAddress: address(2), body: events(60, `${tag}-b`) });
    const seen = describeAnswers([first, second]);
    expect(first.status, seen).toBe(202);
    // 90 + 60 events > the bucket of 100 (and 5 s of refill), after only 2 of 10 requests.
    expect(second.status, seen).toBe(429);
    expect(second.json(), seen).toMatchObject({ limit: 'account_events', detail: expect.stringContaining("this request's 60 events") });
    expect(second.headers['ratelimit-policy']).toBe('"account_events";q=100;w=10;qu="events"');
    expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // A request without events still passes: the requests ceiling has room.
    const usage = await send(url, { apiKey, localAddress: address(3), method: 'GET', path: '/v1/usage' });
    expect(usage.status, usage.body).toBe(200);
    expect(usage.json()).toMatchObject({ used: 90 });

    // The accepted batch is in events.raw; the refused one is not (a 202 is sent only after Kafka has it, so it would be there).
    const { values } = await gw.readTopic<EventRecord>(
      'eventsRaw',
      (v) => v.filter((e) => e.accountId === account.id).length >= 90,
      'the accepted batch in events.raw',
    );
    const ids = values.filter((e) => e.accountId === account.id).map((e) => e.eventId);
    expect(
      ids.filter((id) => id.startsWith(`${tag}-b`)),
      `ids: ${ids.join(',')}`,
    ).toEqual([]);
  });

  it('counts a bulk job as one request, not its events: the events ceiling stays for /v1/events', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const url = urls[1] ?? '';
    // 150 events > the bucket of 100: a bulk job is governed by upload slots, bytes and the allowance.
    const bulk = await send(url, { apiKey, localAddress: address(5), path: '/v1/events/bulk', body: events(150, 'bulk') });
    expect(bulk.status, bulk.body).toBe(202);
    const next = await send(url, { apiKey, localAddress: address(6), body: events(100, 'after-bulk') });
    expect(next.status, next.body).toBe(202);
    expect(next.headers['ratelimit'], next.body).toMatch(/"account_requests";r=8;.*"account_events";r=0;/);
  });

  it('answers a request no wait can make acceptable with its 400, not 429, when both ceilings are spent', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const url = urls[0] ?? '';
    const spent = await send(url, { apiKey, localAddress: address(7), body: events(100, 'spend') });
    expect(spent.status, spent.body).toBe(202);
    const busy = await send(url, { apiKey, localAddress: address(8), body: events(1, 'busy') });
    expect(busy.status, busy.body).toBe(429);
    // And the requests ceiling: 12 reads at once against its bucket of 10.
    const reads = await Promise.all(
      Array.from({ length: 12 }, (_, i) => send(url, { apiKey, localAddress: address(11 + i), method: 'GET', path: '/v1/usage' })),
    );
    expect(reads.filter((r) => r.status === 429).length, describeAnswers(reads)).toBeGreaterThan(0);
    const answers = [
      await send(url, { apiKey, localAddress: address(9), path: '/v1/events/bulk', body: events(10_001, 'too-many-bulk') }),
      await send(url, { apiKey, localAddress: address(10), body: events(101, 'too-many') }),
    ];
    const seen = describeAnswers(answers);
    for (const a of answers) {
      expect(a.status, seen).toBe(400);
      expect(a.headers['retry-after'], seen).toBeUndefined();
      expect(a.json(), seen).toMatchObject({ errors: [expect.objectContaining({ code: 'too_many_items' })] });
    }
    expect(answers[0]?.body, seen).toContain('more than 10000 items');
  });

  it('runs the same arithmetic in Redis as the reference, for both ceilings at once', async () => {
    const run = redisScript(ADMIT_ACCOUNT_REQUEST);
    const policies: RatePolicy[] = [
      { name: 'account_requests', ratePerSecond: 3, burstSeconds: 2 },
      { name: 'account_events', ratePerSecond: 50, burstSeconds: 2 },
    ];
    const params = policies.map(gcraParams);
    const slot = randomUUID();
    const keys = [`test:acctrate:{${slot}}:requests`, `test:acctrate:{${slot}}:events`];
    const start = Date.now() * 1000;
    // Bursts, refusals by either ceiling, refills, and a request larger than the events bucket.
    const steps = [0, 0, 0, 0, 0, 0, 0, 0, 200_000, 400_000, 2_000_000, 2_000_000, 2_100_000, 5_000_000, 5_000_001, 9_000_000].map((dt, i) => ({
      nowUs: start + dt,
      events: [1, 30, 50, 0, 20, 1, 1, 0, 5, 60, 150, 1, 0, 150, 0, 3][i] ?? 0,
    }));
    let tats: (number | undefined)[] = [undefined, undefined];
    const mismatches: string[] = [];
    for (const step of steps) {
      const expected = admit(tats, step.nowUs, [1, step.events], params);
      tats = expected.tats;
      const args = params.flatMap((p, i) => [p.intervalUs, p.toleranceUs, i === 0 ? 1 : step.events]);
      const got = (await run(gw.redis, keys, [String(step.nowUs), ...args])) as number[];
      const want = [expected.allowed ? 1 : 0, expected.hit + 1, expected.retryAfterUs, ...expected.states.flatMap((s) => [s.remaining, s.resetUs])];
      if (JSON.stringify(got) !== JSON.stringify(want))
        mismatches.push(`at +${step.nowUs - start} µs, ${step.events} events: Redis ${JSON.stringify(got)}, reference ${JSON.stringify(want)}`);
    }
    expect(mismatches).toEqual([]);
    await gw.redis.del(...keys);
  });
});

/**
 * Real servers: Kafka, ClickHouse, Redis (the shared local stack); three gateways as real OS
 * processes behind HAProxy running deploy/haproxy/haproxy.cfg (testkit/src/processes/haproxy-process.ts).
 *
 * The limits stay exact across the replicas (docs/scale.md, "Gateways behind a load balancer"):
 * a flood spread by the load balancer over three gateways gets exactly the 202s and the 429s/402s
 * one gateway would give, to the request and to the event:
 * - the per-address rate limit counts the client's address as HAProxy saw it (X-Forwarded-For,
 *   GATEWAY_TRUST_PROXY=1), not the proxy's, and not the address a client writes in its own
 *   X-Forwarded-For;
 * - the per-account events ceiling;
 * - the monthly allowance.
 * Clients are keep-alive clients bound to their own loopback source address (Linux lets a
 * client bind any 127.0.0.0/8 address), as many clients behind one proxy are.
 */
import { Agent, request as httpRequest } from 'node:http';
import { allowanceKeys, allowancePeriod } from '@ingest/domain';
import { type LoadBalancedStack, startLoadBalancedStack } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** The per-address limit of these gateways (small, so the flood is quick). */
const PER_ADDRESS_PER_MINUTE = 30;
/**
 * The pro plan's events ceiling: a bucket of 100 events (1 a second × 100 s of burst) that
 * refills one event a second, so a refused 10-event request cannot fit again for 10 s: a flood
 * answered within that is judged to the event, whatever the machine's speed.
 */
const EVENTS_BUCKET = 100;
const FREE_ALLOWANCE = 1_000;

let stack: LoadBalancedStack<'address' | 'otherAddress' | 'events' | 'allowance'>;
const agents = new Map<string, Agent>();

beforeAll(async () => {
  stack = await startLoadBalancedStack({
    label: 'lb-limits',
    accounts: { address: 'growth', otherAddress: 'growth', events: 'pro', allowance: 'free' },
    gatewayEnv: {
      RATE_LIMIT_PER_MINUTE: String(PER_ADDRESS_PER_MINUTE),
      ACCOUNT_RATE_LIMIT_BURST_SECONDS: '100',
      ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_PRO: '1',
    },
  });
});

afterAll(async () => {
  for (const agent of agents.values()) agent.destroy();
  await stack?.close();
});

interface Answer {
  status: number;
  body: Record<string, unknown>;
  text: string;
}

/** One request through the load balancer from `from`, on that address's kept-alive connections. */
function send(options: {
  from: string;
  apiKey: string;
  method?: 'GET' | 'POST';
  path?: string;
  body?: unknown;
  headers?: Record<string, string>;
}): Promise<Answer> {
  let agent = agents.get(options.from);
  if (!agent) agents.set(options.from, (agent = new Agent({ keepAlive: true, maxSockets: 4 })));
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${stack.lb.url}${options.path ?? '/v1/events'}`,
      {
        method: options.method ?? 'POST',
        agent,
        localAddress: options.from,
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
          ...options.headers,
        },
        signal: AbortSignal.timeout(30_000),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: Record<string, unknown> = {};
          try {
            body = JSON.parse(text) as Record<string, unknown>;
          } catch {
            // HAProxy's own answers (502, 503) are HTML: kept in `text`.
          }
          resolve({ status: res.statusCode ?? 0, body, text });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const events = (n: number, tag: string) => ({
  events: Array.from({ length: n }, (_, i) => ({ eventName: 'Load Balanced', email: `user${i}@acme.io`, eventId: `${tag}-${i}` })),
});
const statuses = (answers: Answer[]) => answers.reduce<Record<number, number>>((acc, a) => ({ ...acc, [a.status]: (acc[a.status] ?? 0) + 1 }), {});
const seen = (answers: Answer[]) =>
  `${JSON.stringify(statuses(answers))}; first answers: ${answers
    .map((a) => `${a.status} ${a.text.slice(0, 120)}`)
    .slice(0, 4)
    .join(' | ')}`;

/** Requests each gateway received from HAProxy during `run`: the load balancer really spread them. */
async function perGateway<T>(run: () => Promise<T>): Promise<{ result: T; requests: number[] }> {
  const before = await stack.lb.serverCounters();
  const result = await run();
  const after = await stack.lb.serverCounters();
  return { result, requests: (['gw1', 'gw2', 'gw3'] as const).map((s) => after[s].requests - before[s].requests) };
}

describe('three gateways behind HAProxy: the limits are exact across them', () => {
  it('counts the per-address limit under the client address HAProxy saw, not the proxy’s nor a forged X-Forwarded-For', async () => {
    const { apiKey } = stack.accounts.address;
    const from = '127.0.0.200';
    const total = PER_ADDRESS_PER_MINUTE + 15;
    // Every other request writes its own X-Forwarded-For, as a client dodging its limit would.
    const { result: answers, requests } = await perGateway(() =>
      Promise.all(
        Array.from({ length: total }, (_, i) =>
          send({ from, apiKey, method: 'GET', path: '/v1/usage', headers: i % 2 === 0 ? { 'x-forwarded-for': `203.0.113.${i}` } : {} }),
        ),
      ),
    );
    console.log(`per-address: ${JSON.stringify(statuses(answers))}; requests per gateway ${JSON.stringify(requests)}`);
    // What one gateway gives: the limit, then 429 naming the per-address policy.
    expect(statuses(answers), seen(answers)).toEqual({ 200: PER_ADDRESS_PER_MINUTE, 429: total - PER_ADDRESS_PER_MINUTE });
    for (const refused of answers.filter((a) => a.status === 429)) expect(refused.body, refused.text).toMatchObject({ status: 429, limit: 'ip' });
    expect(
      requests.every((n) => n > 0),
      JSON.stringify(requests),
    ).toBe(true);
    // Another client behind the same proxy has its own budget: the gateways did not count the proxy's address.
    const other = await Promise.all(
      Array.from({ length: 3 }, () => send({ from: '127.0.0.201', apiKey: stack.accounts.otherAddress.apiKey, method: 'GET', path: '/v1/usage' })),
    );
    expect(
      other.map((a) => a.status),
      seen(other),
    ).toEqual([200, 200, 200]);
  });

  it('admits exactly one events bucket of an account flooding from 30 addresses through three gateways', async () => {
    const { apiKey } = stack.accounts.events;
    const started = performance.now();
    const { result: answers, requests } = await perGateway(() =>
      Promise.all(Array.from({ length: 30 }, (_, i) => send({ from: `127.0.0.${10 + i}`, apiKey, body: events(10, `acct-${i}`) }))),
    );
    const elapsedMs = performance.now() - started;
    const acceptedEvents = answers.reduce((sum, a) => sum + (a.status === 202 ? Number(a.body.accepted) : 0), 0);
    console.log(
      `per-account: ${JSON.stringify(statuses(answers))}, ${acceptedEvents} events accepted in ${elapsedMs.toFixed(0)} ms; requests per gateway ${JSON.stringify(requests)}`,
    );
    // The exactness below holds while no 10-event request can have refilled (10 s).
    expect(elapsedMs).toBeLessThan(10_000);
    expect(statuses(answers), seen(answers)).toEqual({ 202: EVENTS_BUCKET / 10, 429: 30 - EVENTS_BUCKET / 10 });
    expect(acceptedEvents).toBe(EVENTS_BUCKET);
    for (const refused of answers.filter((a) => a.status === 429)) expect(refused.body, refused.text).toMatchObject({ limit: 'account_events' });
    expect(
      requests.every((n) => n > 0),
      JSON.stringify(requests),
    ).toBe(true);
  });

  it('accepts exactly what is left of the monthly allowance, across three gateways, to the event', async () => {
    const { account, apiKey } = stack.accounts.allowance;
    const left = 50;
    await stack.redis.set(allowanceKeys(account.id, allowancePeriod(Date.now()).id, stack.redisKeyPrefix).counter, FREE_ALLOWANCE - left);
    const { result: answers, requests } = await perGateway(() =>
      Promise.all(Array.from({ length: 20 }, (_, i) => send({ from: `127.0.0.${60 + i}`, apiKey, body: events(10, `allow-${i}`) }))),
    );
    const accepted = answers.reduce((sum, a) => sum + (a.status === 202 ? Number(a.body.accepted) : 0), 0);
    const refusedInPart = answers.reduce((sum, a) => sum + (a.status === 202 ? Number(a.body.rejected) : 0), 0);
    const refusedWhole = answers.filter((a) => a.status === 402).length * 10;
    console.log(
      `allowance: ${JSON.stringify(statuses(answers))}, ${accepted} events accepted, ${refusedInPart} refused in 202s, ${refusedWhole} in 402s; requests per gateway ${JSON.stringify(requests)}`,
    );
    expect(
      answers.every((a) => a.status === 202 || a.status === 402),
      seen(answers),
    ).toBe(true);
    expect(accepted, seen(answers)).toBe(left);
    expect(refusedInPart + refusedWhole).toBe(200 - left);
    for (const a of answers.filter((x) => x.status === 402)) expect(a.body, a.text).toMatchObject({ type: '/problems/quota-exceeded', remaining: 0 });
    const usage = await send({ from: '127.0.0.99', apiKey, method: 'GET', path: '/v1/usage' });
    expect(usage.body, usage.text).toMatchObject({ limit: FREE_ALLOWANCE, used: FREE_ALLOWANCE, remaining: 0 });
    expect(
      requests.every((n) => n > 0),
      JSON.stringify(requests),
    ).toBe(true);
  });
});

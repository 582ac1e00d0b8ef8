/**
 * Real servers: Kafka, ClickHouse, and a Redis of this test's own with the role users in an ACL
 * file, as scripts/stack.sh and docker-compose.yml run it (it is SIGKILLed and restarted here, so
 * the shared one keeps serving every other test; that is also why this runs among the
 * integration tests and not alone with the chaos ones). The gateway is a real OS process under
 * its own REDIS_URL (the `gateway` role user), sent to by a keep-alive client.
 *
 * What broke where users run the product: after the local servers were stopped and started
 * under running services, the gateway answered 503 to every request for good while its /readyz
 * said ready (the restarted Redis had lost the role users setup creates, and /readyz did not
 * look at Redis at all). Now, under steady load:
 * 1. Redis killed for longer than every Redis timeout of the gateway (command 2 s, connect 3 s,
 *    reconnect backoff up to ~5 s) and restarted: the role users are still there (ACL file), a
 *    request started after the restart is answered 202 within NEW_REQUEST_BOUND_MS, and /readyz
 *    said 503 `redis: …` during the outage and 200 after;
 * 2. the role user deleted under the running gateway (a Redis restored without its ACL file): every
 *    request 503, /readyz 503 `redis: credentials refused (WRONGPASS …)`; setup's users again, and
 *    a new request is answered 202 within the same bound, with no restart of the gateway.
 * Throughout: only 202 and 503 (problem+json, Retry-After), the gateway never exited and its
 * /healthz stayed 200, every event answered 202 is in events.raw, none answered 503 is.
 */
import { Agent } from 'node:http';
import { connectRedis, createRedis } from '@ingest/platform';
import type { EventRecord } from '@ingest/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GatewayProcess, type RedisWithRoles, startGatewayProcess, startRedisWithRoles, uniqueSuffix, waitFor } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, sendOnAgent } from '@ingest/testkit/gateway';

/** Longer than the gateway's Redis command timeout (2 s), connect timeout (3 s) and reconnect backoff cap (5 s + jitter). */
const OUTAGE_MS = 8_000;
/** A request started after Redis is back (or its users are) is answered 202 within this. */
const NEW_REQUEST_BOUND_MS = 10_000;
const REQUEST_INTERVAL_MS = 50;

interface Sent {
  eventId: string;
  status: number;
  startedAt: number;
  problemType?: string;
  retryAfter?: string;
}

interface Readiness {
  at: number;
  ready: number;
  live: number;
  waitingFor: string[];
}

let gw: GatewayFixture;
let redis: RedisWithRoles;
let gateway: GatewayProcess;

beforeAll(async () => {
  [gw, redis] = await Promise.all([createGatewayFixture(), startRedisWithRoles({ aclFile: true })]);
  gateway = await startGatewayProcess(`redis-restart-${uniqueSuffix()}`, {
    KAFKA_TOPIC_PREFIX: gw.kafka.prefix,
    CLICKHOUSE_DATABASE: gw.clickhouse.database,
    REDIS_URL: redis.roleUrls.gateway,
    RATE_LIMIT_PER_MINUTE: '100000000',
  });
});

afterAll(async () => {
  await gateway?.kill();
  await redis?.close();
  await gw?.close();
});

/** POST /v1/events on the keep-alive agent; a connection error (or no answer in 15 s) is status 0. */
async function post(agent: Agent, apiKey: string, eventId: string): Promise<Sent> {
  const startedAt = Date.now();
  const body = Buffer.from(JSON.stringify({ events: [{ eventName: 'Redis Restart', email: 'a@b.io', eventId }] }));
  try {
    const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
    const answer = await sendOnAgent(agent, gateway.url, { method: 'POST', path: '/v1/events', headers, body }, 15_000);
    const sent: Sent = { eventId, status: answer.status, startedAt };
    if (sent.status !== 202) {
      sent.problemType = String((JSON.parse(answer.body || '{}') as { type?: string }).type);
      sent.retryAfter = answer.headers['retry-after'];
    }
    return sent;
  } catch {
    return { eventId, status: 0, startedAt };
  }
}

describe('Redis restarted, or its role users lost, under a running gateway', () => {
  it('answers 503 meanwhile with /readyz saying why, and 202 again without a restart', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    const sent: Sent[] = [];
    const readiness: Readiness[] = [];
    let running = true;
    let n = 0;
    const load = (async () => {
      const open = new Set<Promise<void>>();
      while (running) {
        const p = post(agent, apiKey, `rr-${n++}`).then((s) => void sent.push(s));
        open.add(p);
        void p.finally(() => open.delete(p));
        await new Promise((r) => setTimeout(r, REQUEST_INTERVAL_MS));
      }
      await Promise.all(open);
    })();
    const watch = (async () => {
      while (running) {
        const h = await gateway.health();
        readiness.push({ at: Date.now(), ready: h.ready, live: h.live, waitingFor: h.waitingFor ?? [] });
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const describeRun = () =>
      `answers: ${JSON.stringify(countBy(sent.map((s) => s.status)))}; readiness: ${JSON.stringify(
        readiness.map((r) => `${r.ready}${r.waitingFor.length ? ` ${r.waitingFor.join('|')}` : ''}`).filter((v, i, a) => v !== a[i - 1]),
      )}`;
    /** Waits until a request started at or after `from` is answered 202; returns how long after `from`. */
    const firstAcceptedAfter = async (from: number, what: string) => {
      await waitFor(() => sent.some((s) => s.startedAt >= from && s.status === 202) || undefined, {
        description: `${what}: a request started after it answered 202 (${describeRun()})`,
        timeoutMs: NEW_REQUEST_BOUND_MS + 5_000,
        intervalMs: 100,
      });
      return Math.min(...sent.filter((s) => s.startedAt >= from && s.status === 202).map((s) => s.startedAt)) - from;
    };

    try {
      await waitFor(() => sent.filter((s) => s.status === 202).length >= 10 || undefined, {
        description: `ten 202s before anything happens (${describeRun()})`,
        timeoutMs: 15_000,
      });

      // 1. Redis killed for longer than every timeout, then restarted from its files.
      const killedAt = Date.now();
      await redis.stop();
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
      const during = readiness.filter((r) => r.at > killedAt + 1_000);
      await redis.start();
      const restartedAt = Date.now();
      const afterRestart = await firstAcceptedAfter(restartedAt, 'Redis restarted');
      console.log(`redis-restart: first 202 started ${afterRestart} ms after the restart; ${describeRun()}`);
      expect(afterRestart, describeRun()).toBeLessThanOrEqual(NEW_REQUEST_BOUND_MS);
      expect(
        sent.some((s) => s.startedAt > killedAt + 1_000 && s.startedAt < restartedAt && s.status === 503),
        describeRun(),
      ).toBe(true);
      expect(
        during.length > 0 && during.every((r) => r.ready === 503 && r.waitingFor.some((w) => w.startsWith('redis: '))),
        `/readyz while Redis was down: ${JSON.stringify(during.slice(0, 3))}`,
      ).toBe(true);
      await waitFor(() => readiness.some((r) => r.at > restartedAt && r.ready === 200) || undefined, {
        description: `/readyz 200 after the restart (${describeRun()})`,
        timeoutMs: NEW_REQUEST_BOUND_MS,
      });

      // 2. The role user gone (a Redis restored without its ACL file): Redis drops its connections.
      const adminClient = createRedis({ url: redis.url });
      await connectRedis(adminClient);
      const deletedAt = Date.now();
      await adminClient.call('ACL', 'DELUSER', 'gateway');
      await waitFor(
        () => readiness.some((r) => r.at > deletedAt && r.ready === 503 && r.waitingFor.some((w) => w.startsWith('redis: credentials refused'))) || undefined,
        { description: `/readyz naming the refused credentials (${describeRun()})`, timeoutMs: 10_000 },
      );
      const refusedAt = Date.now();
      await waitFor(() => sent.some((s) => s.startedAt > refusedAt && s.status === 503) || undefined, {
        description: `a 503 while the user is missing (${describeRun()})`,
        timeoutMs: 5_000,
      });
      await adminClient.close();
      await redis.applyRoles();
      const restoredAt = Date.now();
      const afterRestore = await firstAcceptedAfter(restoredAt, 'role users created again');
      console.log(`redis-restart: first 202 started ${afterRestore} ms after the users were back; ${describeRun()}`);
      expect(afterRestore, describeRun()).toBeLessThanOrEqual(NEW_REQUEST_BOUND_MS);
      await waitFor(() => readiness.some((r) => r.at > restoredAt && r.ready === 200) || undefined, {
        description: `/readyz 200 after the users were back (${describeRun()})`,
        timeoutMs: NEW_REQUEST_BOUND_MS,
      });
    } finally {
      running = false;
      await Promise.all([load, watch]);
      agent.destroy();
    }

    // Throughout: only 202 and 503 problems with Retry-After; the process alive and never restarted.
    const unexpected = sent.filter((s) => s.status !== 202 && !(s.status === 503 && s.problemType === '/problems/unavailable' && s.retryAfter));
    expect(unexpected.slice(0, 5), describeRun()).toEqual([]);
    expect(gateway.exitStatus(), gateway.logTail()).toBeUndefined();
    expect(
      readiness.every((r) => r.live === 200),
      describeRun(),
    ).toBe(true);

    // Every 202 written to events.raw, no 503.
    const accepted = new Set(sent.filter((s) => s.status === 202).map((s) => s.eventId));
    const refused = new Set(sent.filter((s) => s.status === 503).map((s) => s.eventId));
    const { values } = await gw.readTopic<EventRecord>(
      'eventsRaw',
      (v) => [...accepted].every((id) => v.some((r) => r.eventId === id)),
      `the ${accepted.size} accepted events in events.raw`,
    );
    expect(values.filter((r) => refused.has(r.eventId)).map((r) => r.eventId)).toEqual([]);
  });
});

function countBy(values: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

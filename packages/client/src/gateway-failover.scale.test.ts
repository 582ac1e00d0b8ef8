/**
 * Real servers: Kafka, ClickHouse, Redis (the shared local stack); three gateways and a processor
 * as real OS processes, the gateways behind HAProxy running deploy/haproxy/haproxy.cfg
 * (testkit/src/processes/haproxy-process.ts); the SDK (this package) as the clients, with their
 * own batching, keep-alive connections (Node's fetch) and retries.
 *
 * One gateway SIGKILLed under load (docs/scale.md, "Gateways behind a load balancer"):
 * - HAProxy takes it out of rotation within a few seconds (its /readyz health check), and no
 *   attempt fails after that;
 * - the attempts that failed meanwhile (requests the dead gateway held, or a kept-alive
 *   connection to it that HAProxy reused) are counted and reported by how they failed; the SDK's
 *   retries, with the same eventIds, turn every one into a success: no batch given up;
 * - every event the SDK was answered 202 for is stored in ClickHouse exactly once (`count()`
 *   equals `uniqExact(event_id)`, no FINAL);
 * - a new client's request succeeds afterwards, and the other two gateways never stopped.
 */
import { sql } from '@ingest/platform';
import { type LoadBalancedStack, ProcessorFleet, processorSetup, startLoadBalancedStack, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type IngestClient } from './client.js';

const CLIENTS = 4;
/** Events each client tracks a second: ~600/s in all, in batches of at most 20 (~30 requests/s over three gateways). */
const EVENTS_PER_SECOND_PER_CLIENT = 150;
/** HAProxy checks /readyz every second and takes a gateway out after two failures (haproxy.cfg). */
const OUT_OF_ROTATION_BOUND_MS = 5_000;

let stack: LoadBalancedStack<'load'>;
let processors: ProcessorFleet;

beforeAll(async () => {
  stack = await startLoadBalancedStack({
    label: 'lb-failover',
    accounts: { load: 'growth' },
    // Every client is 127.0.0.1 here: the per-address limit is not what this test is about.
    gatewayEnv: { RATE_LIMIT_PER_MINUTE: '1000000' },
    alongside: async ({ kafka, clickhouse, redisKeyPrefix }) => {
      processors = new ProcessorFleet(processorSetup(kafka.prefix, clickhouse.database, 'lb-failover', { REDIS_KEY_PREFIX: redisKeyPrefix }));
      await processors.start();
    },
  });
  console.log(`failover: started in ${JSON.stringify(stack.startMs)} ms`);
});

afterAll(async () => {
  await processors?.killAll();
  await stack?.close();
});

/** One attempt of a client, as its fetch saw it: a status, or the network error's code. */
interface Attempt {
  at: number;
  outcome: number | string;
}

describe('a gateway killed under load behind HAProxy', () => {
  it('is taken out of rotation; the SDK retries what failed; every 202 stored once; a new request succeeds', async () => {
    const { account, apiKey } = stack.accounts.load;
    const attempts: Attempt[] = [];
    const errors: string[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      try {
        const res = await fetch(input, init);
        attempts.push({ at: Date.now(), outcome: res.status });
        return res;
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause?.code;
        attempts.push({ at: Date.now(), outcome: cause ?? (err as Error).name });
        throw err;
      }
    };
    const clients: IngestClient[] = Array.from({ length: CLIENTS }, () =>
      createClient({
        apiKey,
        baseUrl: stack.lb.url,
        batch: { maxEvents: 20, intervalMs: 20 },
        fetch: recordingFetch,
        onError: (e) => errors.push(`${e.code}: ${e.message}`),
        onRejected: (r) => errors.push(`rejected ${r.length}: ${r.map((x) => x.code).join(',')}`),
      }),
    );
    const accepted = () => clients.reduce((sum, c) => sum + c.stats().accepted, 0);

    // --- steady load from every client -------------------------------------------------------
    const tracked: string[] = [];
    let loading = true;
    const load = clients.map(async (client, c) => {
      for (let n = 0, next = Date.now(); loading; n++) {
        const eventId = `fo-${c}-${n}`;
        await client.track({ eventName: 'Failover', email: `user${n % 50}@acme.io`, eventId, properties: { n } });
        tracked.push(eventId);
        next += 1000 / EVENTS_PER_SECOND_PER_CLIENT;
        // Pacing the producer (not waiting on a condition): the event rate of a steady client.
        if (next > Date.now()) await new Promise((r) => setTimeout(r, next - Date.now()));
      }
    });
    const loadStarted = Date.now();
    await waitFor(() => accepted() >= 1_000, { description: '1,000 events accepted before the kill', timeoutMs: 60_000 });

    // --- SIGKILL one gateway, at a moment HAProxy says it holds a request --------------------
    const victim = stack.lb.gateways[1];
    if (!victim) throw new Error('no second gateway');
    // A request takes the gateway a few milliseconds: watch for one (for at most 5 s, then kill anyway).
    const watchUntil = Date.now() + 5_000;
    let busy = false;
    while (!busy && Date.now() < watchUntil) busy = (await stack.lb.serverCounters()).gw2.active > 0;
    const killedAt = Date.now();
    await victim.kill();
    const down = await waitFor(
      async () => {
        const states = await stack.lb.serverStates();
        if (states.gw2.startsWith('DOWN')) return Date.now();
        throw new Error(`HAProxy's view: ${JSON.stringify(states)}`);
      },
      { description: 'HAProxy marks the killed gateway DOWN', timeoutMs: 15_000, intervalMs: 100 },
    );
    const countersAtDown = await stack.lb.serverCounters();
    const acceptedAtDown = accepted();
    await waitFor(() => accepted() >= acceptedAtDown + 1_000, { description: '1,000 more events accepted after it was taken out', timeoutMs: 60_000 });
    loading = false;
    await Promise.all(load);
    await Promise.all(clients.map((c) => c.close({ timeoutMs: 60_000 })));
    const countersAtEnd = await stack.lb.serverCounters();
    const closedAt = Date.now();

    const failed = attempts.filter((a) => a.outcome !== 202);
    const byOutcome = failed.reduce<Record<string, number>>((acc, a) => ({ ...acc, [String(a.outcome)]: (acc[String(a.outcome)] ?? 0) + 1 }), {});
    const retries = clients.reduce((sum, c) => sum + c.stats().retries, 0);
    console.log(
      `failover: killed ${busy ? 'while HAProxy had a request on it' : 'with no request seen on it'}; ${tracked.length} events tracked, ${accepted()} accepted, ${attempts.length} attempts, ${failed.length} failed ${JSON.stringify(byOutcome)} ` +
        `(${failed.length ? `${Math.min(...failed.map((a) => a.at)) - killedAt}..${Math.max(...failed.map((a) => a.at)) - killedAt} ms after the kill` : '-'}), ` +
        `${retries} retries; gw2 DOWN ${down - killedAt} ms after the kill; requests per gateway at DOWN ${JSON.stringify(countersAtDown)}, at the end ${JSON.stringify(countersAtEnd)}; ` +
        `HAProxy: ${stack.lb.haproxyLogTail(6)}`,
    );

    // Out of rotation within the bound; nothing sent to it since, and no attempt failed since.
    expect(down - killedAt).toBeLessThan(OUT_OF_ROTATION_BOUND_MS);
    expect(countersAtEnd.gw2.requests).toBe(countersAtDown.gw2.requests);
    expect(failed.filter((a) => a.at > down + 1_000)).toEqual([]);
    // What failed failed as a dead upstream does: HAProxy's 502/503/504, or the client's kept-alive
    // connection closed without an answer (what HAProxy 2.6 did in every run here: undici's
    // UND_ERR_SOCKET), never a 4xx or another 5xx; each was retried.
    for (const outcome of Object.keys(byOutcome)) expect(outcome).toMatch(/^(502|503|504|[A-Z_]+)$/);
    expect(retries).toBeGreaterThanOrEqual(failed.length);
    // The retries made every failure a success: nothing given up, nothing rejected.
    expect(errors).toEqual([]);
    expect(accepted()).toBe(tracked.length);

    // --- every accepted event stored exactly once ------------------------------------------
    const ch = stack.clickhouse.ch;
    const counts = async () =>
      (await ch.query<{ n: string; u: string }>(sql`SELECT count() AS n, uniqExact(event_id) AS u FROM events WHERE account_id = ${account.id}`))[0];
    const stored = await waitFor(
      async () => {
        const now = await counts();
        if (Number(now?.u) >= tracked.length) return now;
        throw new Error(`${now?.u} of ${tracked.length} events in ClickHouse (${now?.n} rows)`);
      },
      { description: 'every accepted event in ClickHouse', timeoutMs: 60_000, intervalMs: 500 },
    );
    console.log(
      `failover: load from -${killedAt - loadStarted} ms to +${closedAt - killedAt} ms of the kill (clients closed); all in ClickHouse ${Date.now() - closedAt} ms after that`,
    );
    expect({ rows: Number(stored?.n), ids: Number(stored?.u) }).toEqual({ rows: tracked.length, ids: tracked.length });
    const sample = tracked.filter((_, i) => i % 97 === 0);
    const found = await ch.query<{ id: string }>(sql`SELECT event_id AS id FROM events WHERE account_id = ${account.id} AND event_id IN ${sample}`);
    expect(found.map((r) => r.id).sort()).toEqual([...sample].sort());

    // --- afterwards: a new client's request succeeds; the other gateways never stopped --------
    const fresh = createClient({ apiKey, baseUrl: stack.lb.url, onError: (e) => errors.push(e.code) });
    await fresh.track({ eventName: 'After Failover', email: 'after@acme.io', eventId: 'fo-after' });
    await fresh.close({ timeoutMs: 30_000 });
    expect({ ...fresh.stats(), errors }).toMatchObject({ accepted: 1, retries: 0, errors: [] });
    expect(stack.lb.gateways.map((g) => g.exitStatus())).toEqual([undefined, 'SIGKILL', undefined]);
    expect(processors.unexpectedExits()).toEqual([]);
  });
});

/**
 * Real servers: Kafka (frozen with SIGSTOP, then SIGCONT, by this test), ClickHouse, Redis; the
 * gateway, the processor and the crm-sink as real OS processes; a fake HubSpot over real HTTP.
 *
 * The reproduction of a stalled broker (a long GC pause, a frozen VM, a partition), for each
 * Kafka driver: under steady load over real HTTP the broker is frozen for four times the
 * consumers' session timeout, so every member is dropped from its group when it wakes up
 * (kafkajs then crashed for good with "The coordinator is not aware of this member" and the
 * processor never rejoined), and for longer than every producer's in-flight deadline and the
 * library's request timeout, so sends the broker holds are given up on our side and written on
 * its side (every producer's sequence numbers then fell behind the broker's, and the gateway
 * answered 500 to every request for ever while /readyz said ready). After the resume:
 * - a request started after the resume is answered 202 within NEW_REQUEST_BOUND_MS;
 * - the gateway's /readyz said not ready (naming the producer) during the stall, and ready after;
 * - every event answered 202 is in ClickHouse and synced by the CRM sink within DELIVERY_BOUND_MS,
 *   each event id stored once (504s at most once), no event answered 503 stored (503 means "not
 *   written"), no answer other than 202, 503 and 504;
 * - no process exited or was restarted, every /healthz answers 200, and every /readyz answers 200
 *   again within DELIVERY_BOUND_MS;
 * - the gateway's RSS stayed flat while Kafka was away (its queue of writes is bounded).
 *
 * The deadlines are shortened so that both drivers' sends outlive them within the stall (CI
 * time). The product's own defaults (KAFKA_IN_FLIGHT_TIMEOUT_MS 30 s) with a 45 s stall:
 * `CHAOS_BROKER_STALL_MS=45000 CHAOS_IN_FLIGHT_TIMEOUT_MS=default npx vitest run --project chaos broker-pause`.
 */
import type { CrmMapping } from '@ingest/schemas';
import { METRIC_NAMES, PRODUCER_PART, sql, TOPICS } from '@ingest/platform';
import { syncStateKey } from '@ingest/domain';
import {
  chaosKafkaDrivers,
  createTestClickHouse,
  createTestKafka,
  integrationEnv,
  pauseKafka,
  resumeKafka,
  startControlPlaneClients,
  type TestClickHouse,
  type TestKafka,
  uniqueSuffix,
  waitFor,
} from '@ingest/testkit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { metricSum } from '@ingest/testkit';
import { SinkFleet } from '@ingest/testkit';
import { type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { type GatewayProcess, startGatewayProcess } from '@ingest/testkit';
import { ProcessorFleet, processorSetup } from '@ingest/testkit';

const SESSION_TIMEOUT_MS = 6_000;
/**
 * Every producer's in-flight deadline (all three services): shorter than the stall, so sends in
 * flight when the broker froze are given up while it still holds them. `default`: the services' own.
 */
const IN_FLIGHT_TIMEOUT_MS = process.env.CHAOS_IN_FLIGHT_TIMEOUT_MS ?? '8000';
/** The scenario itself: long enough that the broker drops every member when it wakes up, and longer than every deadline. */
const STALL_MS = Number(process.env.CHAOS_BROKER_STALL_MS ?? 4 * SESSION_TIMEOUT_MS);
/** A request started after the resume is answered 202 within this (no restart). */
const NEW_REQUEST_BOUND_MS = 30_000;
/** Bound on every accepted event reaching ClickHouse and the CRM, counted from the resume. */
const DELIVERY_BOUND_MS = 120_000;
/** Steady load: requests of 10 events, started at this rate whatever the answers take. */
const REQUESTS_PER_SECOND = 40;
const EVENTS_PER_REQUEST = 10;
/** Most requests waiting for an answer at once (a stalled broker holds them): the client's own bound. */
const MAX_OPEN_REQUESTS = 400;
/** The gateway's queue of writes is capped low here, so a growth of its RSS would show. */
const MAX_QUEUED_BYTES = 8 * 1024 * 1024;
const RSS_GROWTH_BOUND = 96 * 1024 * 1024;
const CONTACTS = 50;

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-pause' },
  rules: [{ id: 'page-view', when: { eventName: 'Page Viewed' }, object: 'contact', actions: [{ op: 'increment', field: 'page_views' }] }],
};

type Answer = 202 | 503 | 504 | number;

afterAll(async () => {
  await resumeKafka(); // whatever happened, never leave the broker frozen
});

describe.each(chaosKafkaDrivers())('a broker stalled under load, end to end (%s)', (driver) => {
  let kafka: TestKafka | undefined;
  let clickhouse: TestClickHouse | undefined;
  let crm: FakeCrm | undefined;
  let gateway: GatewayProcess | undefined;
  let processors: ProcessorFleet | undefined;
  let sinks: SinkFleet | undefined;
  const closers: (() => Promise<unknown>)[] = [];

  afterEach(async () => {
    await resumeKafka();
    await gateway?.kill();
    await processors?.killAll();
    await sinks?.killAll();
    for (const close of closers.splice(0).reverse()) await close().catch(() => {});
    await crm?.stop();
    await clickhouse?.cleanup();
    await kafka?.cleanup();
  });

  it('recovers by itself: every 202 reaches ClickHouse and the CRM, no 503 was written, nothing restarted, RSS flat', async () => {
    kafka = await createTestKafka(Object.keys(TOPICS) as (keyof typeof TOPICS)[], integrationEnv(), driver);
    clickhouse = await createTestClickHouse();
    const clients = await startControlPlaneClients(kafka);
    closers.push(() => clients.close());
    const { redis, controlPlane } = clients;
    const account = await controlPlane.createAccount({ name: `Pause ${driver}`, plan: 'growth' });
    const { plaintext: apiKey } = await controlPlane.createApiKey(account.id, 'load');
    const token = `tok-pause-${uniqueSuffix()}`;
    crm = await startFakeCrm({ tokens: [token] });
    await controlPlane.putCrmCredential(account.id, mapping.crm.credentialsRef, { type: 'hubspot', accessToken: token, baseUrl: crm.url });
    await controlPlane.putMapping(account.id, mapping, 'admin');

    const common = {
      KAFKA_DRIVER: driver,
      KAFKA_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
      ...(IN_FLIGHT_TIMEOUT_MS === 'default' ? {} : { KAFKA_IN_FLIGHT_TIMEOUT_MS: IN_FLIGHT_TIMEOUT_MS }),
    };
    const sinkPrefix = `t${uniqueSuffix()}:`;
    processors = new ProcessorFleet({ ...processorSetup(kafka.prefix, clickhouse.database, `pause-${driver}`), env: common });
    sinks = new SinkFleet({
      topicPrefix: kafka.prefix,
      redisKeyPrefix: sinkPrefix,
      groupId: `crm-sink-pause-${uniqueSuffix()}`,
      label: `pause-sink-${driver}`,
      env: common,
    });
    // The three start side by side: none needs another to be ready (CI time).
    const [processor, sink, gw] = await Promise.all([
      processors.start(),
      sinks.start(),
      startGatewayProcess(`pause-gateway-${driver}`, {
        ...common,
        KAFKA_TOPIC_PREFIX: kafka.prefix,
        CLICKHOUSE_DATABASE: clickhouse.database,
        RATE_LIMIT_PER_MINUTE: '100000000',
        KAFKA_MAX_QUEUED_BYTES: String(MAX_QUEUED_BYTES),
      }).then((g) => (gateway = g)),
    ]);

    // --- load over real HTTP, every answer remembered per event id -------------------------
    const answers = new Map<string, Answer>();
    /** Every request: when it started and was answered, and how. */
    const requestLog: { started: number; answered: number; status: Answer }[] = [];
    /** The gateway's /readyz, sampled throughout. */
    const readiness: { at: number; status: number; waitingFor?: string[] }[] = [];
    const rss: { at: number; bytes: number }[] = [];
    let sent = 0;
    let open = 0;
    let loading = true;
    const post = async (ids: string[]) => {
      open++;
      const started = Date.now();
      const answer = (status: Answer) => {
        for (const id of ids) answers.set(id, status);
        requestLog.push({ started, answered: Date.now(), status });
      };
      try {
        const res = await fetch(`${gw.url}/v1/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            events: ids.map((eventId, i) => ({ eventId, eventName: 'Page Viewed', email: `user${i % CONTACTS}@acme.io`, properties: { n: i } })),
          }),
          signal: AbortSignal.timeout(90_000),
        });
        await res.arrayBuffer();
        answer(res.status);
      } catch {
        answer(0);
      } finally {
        open--;
      }
    };
    const requests: Promise<void>[] = [];
    const load = (async () => {
      for (let next = Date.now(); loading; next += 1000 / REQUESTS_PER_SECOND) {
        await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
        rss.push({ at: Date.now(), bytes: gw.rssBytes() });
        if (open >= MAX_OPEN_REQUESTS) continue;
        const ids = Array.from({ length: EVENTS_PER_REQUEST }, () => `pause-${sent++}`);
        requests.push(post(ids));
      }
    })();
    const count = (status: Answer) => [...answers.values()].filter((a) => a === status).length;
    const sampleReadiness = setInterval(() => {
      const at = Date.now();
      fetch(`${gw.opsUrl}/readyz`, { signal: AbortSignal.timeout(2_000) })
        .then(async (res) => readiness.push({ at, status: res.status, waitingFor: ((await res.json()) as { waitingFor?: string[] }).waitingFor }))
        .catch(() => readiness.push({ at, status: 0 }));
    }, 250);
    closers.push(async () => clearInterval(sampleReadiness));

    await waitFor(() => count(202) >= 2_000, { description: 'load flowing (2,000 events accepted)', timeoutMs: 60_000 });
    const pausedAt = Date.now();
    pauseKafka();
    await new Promise((resolve) => setTimeout(resolve, STALL_MS));
    await resumeKafka();
    const resumedAt = Date.now();
    const acceptedAtResume = count(202);
    const sinceResume = () => requestLog.filter((r) => r.started >= resumedAt);
    await waitFor(
      () => {
        if (sinceResume().some((r) => r.status === 202)) return true;
        const statuses = [...new Set(sinceResume().map((r) => r.status))].join(',');
        throw new Error(
          `${sinceResume().length} requests started since the resume, none answered 202 (answers: ${statuses || 'none yet'}); gateway log: ${gw.logTail(6)}`,
        );
      },
      { description: `a request started after the resume answered 202 within ${NEW_REQUEST_BOUND_MS} ms`, timeoutMs: NEW_REQUEST_BOUND_MS, intervalMs: 250 },
    );
    const firstNewAccepted =
      Math.min(
        ...sinceResume()
          .filter((r) => r.status === 202)
          .map((r) => r.answered),
      ) - resumedAt;
    await waitFor(() => count(202) >= acceptedAtResume + 1_000, { description: '1,000 more events accepted after the resume', timeoutMs: 60_000 });
    loading = false;
    await load;
    await Promise.all(requests);
    clearInterval(sampleReadiness);

    const accepted = [...answers].filter(([, a]) => a === 202).map(([id]) => id);
    const refused = [...answers].filter(([, a]) => a === 503).map(([id]) => id);
    const unknown = [...answers].filter(([, a]) => a === 504).map(([id]) => id);
    const other = [...answers].filter(([, a]) => a !== 202 && a !== 503 && a !== 504);
    const renewals = {
      gateway: metricSum(await gw.metrics(), METRIC_NAMES.kafkaProducerRenewals),
      processor: metricSum(await processor.metrics(), METRIC_NAMES.kafkaProducerRenewals),
      sink: metricSum(await sink.metrics(), METRIC_NAMES.kafkaProducerRenewals),
    };
    const notReady = readiness.filter((r) => r.status !== 200);
    console.log(
      `${driver}: ${accepted.length} events answered 202, ${refused.length} 503, ${unknown.length} 504, ${other.length} other (${[...new Set(other.map(([, a]) => a))].join(',')}); stall ${STALL_MS} ms, in-flight deadline ${IN_FLIGHT_TIMEOUT_MS}; first request started after the resume answered 202 after ${firstNewAccepted} ms; producers replaced ${JSON.stringify(renewals)}; gateway not ready from ${notReady.length ? (notReady[0]?.at ?? 0) - pausedAt : '-'} ms after the pause to ${notReady.length ? (notReady.at(-1)?.at ?? 0) - resumedAt : '-'} ms after the resume (${JSON.stringify(notReady.find((r) => r.waitingFor))})`,
    );
    // The stall outlived the gateway's in-flight deadline: its producer was given up and replaced.
    expect(renewals.gateway).toBeGreaterThan(0);
    // Health told the truth: ready before the stall, not ready (the producer named) during it.
    expect(
      readiness.filter((r) => r.at < pausedAt).every((r) => r.status === 200),
      JSON.stringify(readiness.filter((r) => r.at < pausedAt && r.status !== 200)),
    ).toBe(true);
    expect(
      readiness.some((r) => r.status === 503 && r.at >= pausedAt && r.at <= resumedAt + NEW_REQUEST_BOUND_MS && r.waitingFor?.includes(PRODUCER_PART)),
      JSON.stringify(readiness.filter((r) => r.at >= pausedAt - 1_000)),
    ).toBe(true);

    // --- every 202 in ClickHouse and synced to the CRM, within the bound -------------------
    const ch = clickhouse.ch;
    const stored = async () =>
      new Set((await ch.query<{ id: string }>(sql`SELECT DISTINCT event_id AS id FROM events WHERE account_id = ${account.id}`)).map((r) => r.id));
    await waitFor(
      async () => {
        const have = await stored();
        const missing = accepted.filter((id) => !have.has(id));
        if (missing.length > 0)
          throw new Error(`${missing.length} of ${accepted.length} accepted events not in ClickHouse, e.g. ${missing.slice(0, 3).join(', ')}`);
        return true;
      },
      { description: 'every accepted event in ClickHouse', timeoutMs: Math.max(1_000, resumedAt + DELIVERY_BOUND_MS - Date.now()), intervalMs: 1_000 },
    );
    await waitFor(
      async () => {
        let pending = 0;
        for (let i = 0; i < accepted.length; i += 1_000) {
          const states = await redis.mget(...accepted.slice(i, i + 1_000).map((id) => syncStateKey(sinkPrefix, account.id, id)));
          pending += states.filter((s) => s === null || !/"state":"synced"/.test(s)).length;
        }
        if (pending > 0) throw new Error(`${pending} of ${accepted.length} accepted events not synced to the CRM`);
        return true;
      },
      { description: 'every accepted event synced to the CRM', timeoutMs: Math.max(1_000, resumedAt + DELIVERY_BOUND_MS - Date.now()), intervalMs: 1_000 },
    );
    console.log(`${driver}: everything accepted stored and synced ${((Date.now() - resumedAt) / 1000).toFixed(1)} s after the resume`);

    // --- 503 means not written ----------------------------------------------------------------
    const have = await stored();
    expect(refused.filter((id) => have.has(id))).toEqual([]);
    expect(other).toEqual([]);
    // Stored once: no event id twice in the deduplicated table (a 504 at most once).
    const twice = await ch.query<{ id: string; n: string }>(
      sql`SELECT event_id AS id, count() AS n FROM events FINAL WHERE account_id = ${account.id} GROUP BY event_id HAVING n > 1 LIMIT 5`,
    );
    expect(twice).toEqual([]);

    // --- nothing restarted, every process healthy --------------------------------------------
    expect([gw.exitStatus(), processor.exitStatus(), sink.exitStatus()]).toEqual([undefined, undefined, undefined]);
    expect(processors.unexpectedExits()).toEqual([]);
    expect(sinks.unexpectedExits()).toEqual([]);
    // Live throughout; ready again by itself within the delivery bound. A consumer of a part the
    // test does not load (the ledger copier, the control plane) may still be in its rejoin
    // backoff when the loaded ones have delivered everything: not ready, but not restarted.
    const health = async () => ({
      gateway: await Promise.all(['/healthz', '/readyz'].map(async (p) => (await fetch(`${gw.opsUrl}${p}`)).status)),
      processor: await processor.health(),
      sink: await sink.health(),
    });
    const now = await health();
    expect({ gateway: now.gateway[0], processor: now.processor.live, sink: now.sink.live }, JSON.stringify(now)).toEqual({
      gateway: 200,
      processor: 200,
      sink: 200,
    });
    await waitFor(
      async () => {
        const state = await health();
        const ok = state.gateway.every((c) => c === 200) && [state.processor, state.sink].every((h) => h.live === 200 && h.ready === 200);
        if (!ok) throw new Error(`${JSON.stringify(state)}; processor log: ${processor.logTail(8)}`);
        return true;
      },
      { description: 'every process live and ready', timeoutMs: Math.max(1_000, resumedAt + DELIVERY_BOUND_MS - Date.now()), intervalMs: 500 },
    );
    console.log(
      `${driver}: every process ready ${((Date.now() - resumedAt) / 1000).toFixed(1)} s after the resume (ready when checked first: ${JSON.stringify(now)})`,
    );

    // --- the gateway's memory stayed flat while Kafka was away -------------------------------
    const before = rss.filter((s) => s.at < pausedAt).map((s) => s.bytes);
    const during = rss.filter((s) => s.at >= pausedAt && s.at <= resumedAt + 5_000).map((s) => s.bytes);
    const baseline = Math.max(...before);
    const peak = Math.max(...during);
    console.log(`${driver}: gateway RSS ${(baseline / 1e6).toFixed(0)} MB before the stall, peak ${(peak / 1e6).toFixed(0)} MB during it`);
    expect(peak - baseline).toBeLessThan(RSS_GROWTH_BOUND);
  });
});

/**
 * Real servers: Kafka and Redis (parked events live there); the CRMs are two webhook receivers of
 * the test kit's fake CRM (@ingest/testkit/fake-crm) over real HTTP, called by the real webhook adapter with
 * the production HTTP client (timeouts, response cap, outbound policy allowing loopback only).
 *
 * Regression (issue 16): one account's CRM answering `Retry-After: 2000000` made the sink sleep
 * for 23 days for it, and its unfinished events held every partition's offsets. Account A's
 * webhook now answers that, then hangs, then returns a 100 MB body; account B's sync latency
 * stays under max(2x its baseline, 1 s) throughout, partition offsets move on while A is blocked,
 * and every event of A arrives once after A recovers.
 */
import type { EventRecord } from '@ingest/schemas';
import { committedOffsets } from '@ingest/platform';
import { type CrmCredential } from '@ingest/domain';
import { uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from './adapters/index.js';
import { FAKE_CRM_OUTBOUND, FAKE_WEBHOOK_SECRET, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { createStaticMappings } from './adapters/memory-crm.fixture.js';
import { createSinkFixture, type SinkFixture, TEST_PARK, usesCounterMapping } from './crm-sink.fixture.js';

const A = 'acc_blocked';
const B = 'acc_healthy';
let fx: SinkFixture;
let crm: FakeCrm;
let groupId: string;
let produced = 0;

const mapping = usesCounterMapping('hooks');

beforeAll(async () => {
  crm = await startFakeCrm({ webhookSecrets: [FAKE_WEBHOOK_SECRET] });
  const hook = (name: string): CrmCredential => ({ type: 'webhook', url: `${crm.url}/webhook/${name}`, secret: FAKE_WEBHOOK_SECRET });
  fx = await createSinkFixture({
    mappings: createStaticMappings({ [A]: { mapping, credential: hook(A) }, [B]: { mapping, credential: hook(B) } }),
    createAdapter: (credential) =>
      createAdapter(credential, {
        outboundPolicy: FAKE_CRM_OUTBOUND,
        headersTimeoutMs: 2_000,
        bodyTimeoutMs: 2_000,
        requestTimeoutMs: 3_000,
        maxResponseBytes: 1024 * 1024,
      }),
  });
  groupId = `crm-sink-${uniqueSuffix()}`;
  await fx.startSink(groupId, {
    coalesce: { windowMs: 100, maxRecords: 50 },
    // Retry-After is clamped to 2 s here (60 s in production) so the test does not wait a minute.
    park: { ...TEST_PARK, hold: { holdMs: 1_000, maxRetryAfterMs: 2_000 }, hangingDelayMs: 1_000, baseDelayMs: 100, maxDelayMs: 500 },
  });
});

afterAll(async () => {
  await fx?.cleanup();
  await crm?.stop();
});

async function produce(records: EventRecord[]): Promise<void> {
  produced += records.length;
  await fx.produce(records);
}

/** Milliseconds from producing each event of B to its first delivery at B's receiver, the slowest of a round. */
async function roundOfB(round: string): Promise<number> {
  const events = Array.from({ length: 3 }, (_, i) => fx.event(B, 'Used', `b${i}-${round}@healthy.io`, { n: round }));
  const startedAt = Date.now();
  await produce(events);
  const delivered = (email: string) =>
    crm.calls.find(
      (c) => c.token === B && c.status === 200 && JSON.stringify((c.body as { records?: { key: string }[] }).records ?? []).includes(`"${email}"`),
    );
  await waitFor(() => events.every((e) => delivered(e.email as string)), { description: `B's round ${round} delivered`, timeoutMs: 20_000 });
  return Math.max(...events.map((e) => (delivered(e.email as string)?.at ?? Number.POSITIVE_INFINITY) - startedAt));
}

const aEvents: EventRecord[] = [];
async function eventsOfA(phase: string): Promise<void> {
  const events = Array.from({ length: 8 }, (_, i) => fx.event(A, 'Used', `a${i % 4}@blocked.io`, { n: `${phase}-${i}` }, aEvents.length + i));
  aEvents.push(...events);
  await produce(events);
}

const answeredToA = (status: number) => crm.calls.filter((c) => c.token === A && c.status === status).length;
const parkedOfA = async () => fx.redis.llen(`${fx.redisKeyPrefix}crm:park:{parked}:list:${A}`);

describe('crm-sink isolation of a blocked account', () => {
  it("keeps B's latency while A is rate limited for 23 days, hangs, then answers 100 MB; A's events all arrive once after it recovers", async () => {
    const baseline = [await roundOfB('warm'), await roundOfB('base1'), await roundOfB('base2'), await roundOfB('base3')]
      .slice(1)
      .sort((x, y) => x - y)[1] as number;
    const bound = Math.max(2 * baseline, 1_000);
    const latencies: Record<string, number> = {};

    // 1. Retry-After: 2000000 seconds (23 days).
    crm.failNext({ crm: 'webhook', token: A, status: 429, retryAfter: '2000000', times: 10_000 });
    await eventsOfA('limited');
    await waitFor(async () => answeredToA(429) > 0 && (await parkedOfA()) > 0, { description: 'A rate limited and its events parked' });
    latencies.limited1 = await roundOfB('limited1');
    latencies.limited2 = await roundOfB('limited2');

    // 2. A hangs: its calls are answered after 8 s, past the hold (1 s) and the whole-call timeout (3 s).
    crm.clearFaults();
    crm.failNext({ crm: 'webhook', token: A, delayMs: 8_000, times: 10_000 });
    const callsBefore = crm.calls.filter((c) => c.token === A).length;
    await eventsOfA('hanging');
    await waitFor(() => crm.calls.filter((c) => c.token === A).length > callsBefore, { description: 'A called while it hangs', timeoutMs: 20_000 });
    latencies.hanging1 = await roundOfB('hanging1');
    latencies.hanging2 = await roundOfB('hanging2');

    // 3. A answers 200 with a 100 MB body, which the client stops reading at 1 MiB.
    crm.clearFaults();
    crm.failNext({ crm: 'webhook', token: A, bodyBytes: 100 * 1024 * 1024, times: 10_000 });
    // The client hangs up mid-body, so these calls never finish answering: counted when they arrive.
    const hugeBefore = crm.calls.filter((c) => c.token === A).length;
    await eventsOfA('huge');
    await waitFor(() => crm.calls.filter((c) => c.token === A).length > hugeBefore, { description: 'A called while it answers 100 MB', timeoutMs: 20_000 });
    latencies.huge1 = await roundOfB('huge1');
    latencies.huge2 = await roundOfB('huge2');

    // Offsets moved on past every event, A's included, while A is still blocked.
    expect(await parkedOfA()).toBeGreaterThan(0);
    const topic = fx.kafka.topic('eventsUnique');
    await waitFor(
      async () => [...(await committedOffsets(fx.kafka.kafka, groupId, topic)).values()].reduce((n, o) => n + Math.max(0, Number(o)), 0) === produced,
      {
        description: `all ${produced} offsets committed while A is blocked`,
      },
    );
    expect((await fx.states(aEvents)).filter((s) => s.state !== 'pending')).toEqual([]);

    for (const [phase, ms] of Object.entries(latencies)) expect(ms, `B's latency while A was ${phase} (baseline ${baseline} ms)`).toBeLessThanOrEqual(bound);

    // 4. A recovers: every event arrives, once (each contact's counter = its events), and nothing is dead-lettered.
    crm.clearFaults();
    await fx.settled(aEvents, 60_000);
    expect((await fx.states(aEvents)).map((s) => s.state)).toEqual(aEvents.map(() => 'synced'));
    for (let c = 0; c < 4; c += 1) {
      const own = aEvents.filter((e) => e.email === `a${c}@blocked.io`);
      expect(crm.records('webhook', 'contact').get(`a${c}@blocked.io`)?.properties).toEqual({ uses: own.length, last: own.at(-1)?.properties.n });
    }
    await waitFor(async () => (await parkedOfA()) === 0, { description: "A's park emptied" });
  });
});

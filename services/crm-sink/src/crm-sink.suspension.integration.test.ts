/**
 * Real servers: Kafka (events and the control plane's compacted topics) and Redis (the park); the
 * fake CRM's webhook receivers over real HTTP with the real adapter. The wiring of main.ts: the
 * sink reads accounts, mappings and credentials through a control plane of its own, so a
 * suspension written by the admin side's control plane reaches it through Kafka.
 *
 * Issue 17: while account A is suspended its events are held (parked, not dropped, not
 * dead-lettered) and nothing reaches its CRM, while B's events keep arriving; once A is resumed,
 * A's held events arrive in order, each once, also when A stayed suspended for longer than the
 * park's maximum age. Events still being coalesced when the suspension lands are held before the
 * newer ones.
 */
import type { EventRecord } from '@ingest/schemas';
import { type Account, type ControlPlane, createControlPlane } from '@ingest/domain';
import { createMetricsRegistry, type Registry } from '@ingest/platform';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { FAKE_CRM_OUTBOUND, FAKE_WEBHOOK_SECRET, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from './adapters/index.js';
import { createSinkFixture, type SinkFixture, TEST_PARK, usesCounterMapping } from './crm-sink.fixture.js';

/** The revocation bound (docs/access-control.md): every replica sees a suspension within it. */
const REVOCATION_BOUND_MS = 5_000;
/** Parked events older than this are dead-lettered, but time suspended does not count. */
const MAX_AGE_MS = 2_000;

let fx: SinkFixture;
let crm: FakeCrm;
let admin: ControlPlane;
let sinkView: ControlPlane;
let metrics: Registry;

/**
 * What the sink sees of accounts: the control plane's, except accounts the test switches itself
 * (to land a suspension at an exact point), and how often it asked about each.
 */
const switched = new Map<string, boolean>();
const checks = new Map<string, number>();
const accountsSeen = {
  accountById(id: string): Account | undefined {
    checks.set(id, (checks.get(id) ?? 0) + 1);
    const real = sinkView.accountById(id);
    if (!real || !switched.has(id)) return real;
    const { suspension: _, ...rest } = real;
    return switched.get(id) ? { ...rest, suspension: { reason: 'test switch', suspendedAt: new Date().toISOString() } } : rest;
  },
  listAccounts: () => sinkView.listAccounts(),
};

const mapping = usesCounterMapping('hooks');

beforeAll(async () => {
  crm = await startFakeCrm({ webhookSecrets: [FAKE_WEBHOOK_SECRET] });
  fx = await createSinkFixture({
    createAdapter: (credential) => createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND }),
    controlPlane: true,
  });
  admin = fx.controlPlane();
  // As main.ts builds the sink's: only the topics its principal may read.
  sinkView = createControlPlane({
    kafka: fx.kafka.kafka,
    producer: fx.producer,
    topicPrefix: fx.kafka.prefix,
    logger: testLogger(),
    instanceId: 'crm-sink',
    mappingVersionsKept: 1,
    readTopics: ['controlAccounts', 'controlMappings', 'controlCrmCredentials'],
  });
  await sinkView.start();
  metrics = createMetricsRegistry('crm-sink-test');
  await fx.startSink(`crm-sink-${uniqueSuffix()}`, {
    mappings: sinkView,
    accounts: accountsSeen,
    metrics,
    // Long enough for the second test to land a suspension while an event is being coalesced.
    coalesce: { windowMs: 1_500, maxRecords: 50 },
    park: { ...TEST_PARK, maxAgeMs: MAX_AGE_MS },
  });
});

afterAll(async () => {
  await fx?.cleanup();
  await sinkView?.stop();
  await crm?.stop();
});

async function account(name: string): Promise<string> {
  const created = await admin.createAccount({ name, plan: 'pro' });
  await admin.putCrmCredential(created.id, 'hooks', { type: 'webhook', url: `${crm.url}/webhook/${created.id}`, secret: FAKE_WEBHOOK_SECRET });
  await admin.putMapping(created.id, mapping, 'cli');
  return created.id;
}

const callsTo = (accountId: string) => crm.calls.filter((c) => c.token === accountId);
const contact = (email: string) => crm.records('webhook', 'contact').get(email)?.properties;

async function suspendedAccountsMetric(): Promise<number | undefined> {
  const metric = await metrics.getSingleMetric('ingest_crm_suspended_accounts')?.get();
  return metric?.values[0]?.value;
}

describe('crm-sink and suspended accounts', () => {
  it("holds a suspended account's events (nothing reaches its CRM, other accounts flow) and delivers them in order, each once, after it is resumed", async () => {
    const [a, b] = [await account(`Suspended ${uniqueSuffix()}`), await account(`Healthy ${uniqueSuffix()}`)];
    await waitFor(() => sinkView.crmCredential(a, 'hooks') && sinkView.crmCredential(b, 'hooks') && sinkView.currentMapping(b), {
      description: "the sink's control plane has both accounts' mapping and credential",
    });

    // Suspended through the admin side; the sink's replica sees it within the revocation bound.
    const suspendedAt = Date.now();
    await admin.suspendAccount(a, 'abuse report 42');
    await waitFor(() => sinkView.accountById(a)?.suspension !== undefined, {
      description: "the sink's replica sees A suspended",
      timeoutMs: REVOCATION_BOUND_MS,
    });
    expect(Date.now() - suspendedAt).toBeLessThanOrEqual(REVOCATION_BOUND_MS);

    const aEvents: EventRecord[] = Array.from({ length: 6 }, (_, i) => fx.event(a, 'Used', `a${i % 2}@held.io`, { n: `n${i}` }, i));
    const bEvents: EventRecord[] = Array.from({ length: 3 }, (_, i) => fx.event(b, 'Used', `b${i}@flowing.io`, { n: `n${i}` }, i));
    await fx.produce([...aEvents, ...bEvents]);

    // B flows while A is held.
    await fx.settled(bEvents);
    expect((await fx.states(bEvents)).map((s) => s.state)).toEqual(bEvents.map(() => 'synced'));
    const parkList = `${fx.redisKeyPrefix}crm:park:{parked}:list:${encodeURIComponent(a)}`;
    const parkMeta = `${fx.redisKeyPrefix}crm:park:{parked}:meta:${encodeURIComponent(a)}`;
    await waitFor(async () => (await fx.redis.llen(parkList)) === aEvents.length, { description: `A's ${aEvents.length} events held in the park` });
    // The resumer keeps finding A suspended (park.store `hold`) past the park's maximum age, and calls nothing.
    const parkedAt = (JSON.parse((await fx.redis.lindex(parkList, 0)) ?? '{}') as { at: number }).at;
    await waitFor(async () => Number(await fx.redis.hget(parkMeta, 'heldAt')) > parkedAt + MAX_AGE_MS, {
      description: `the resumer found A still suspended ${MAX_AGE_MS} ms after its first event was parked`,
      timeoutMs: 10_000,
    });
    expect(callsTo(a), "calls to A's CRM while suspended").toEqual([]);
    expect(await fx.redis.llen(parkList)).toBe(aEvents.length);
    expect((await fx.states(aEvents)).map((s) => s.state)).toEqual(aEvents.map(() => 'pending'));
    expect(await suspendedAccountsMetric()).toBe(1);

    // Resumed: every held event arrives once (the counter equals the events), in order (the last value is the last event's).
    await admin.resumeAccount(a);
    await fx.settled(aEvents);
    expect((await fx.states(aEvents)).map((s) => s.state)).toEqual(aEvents.map(() => 'synced'));
    for (const email of ['a0@held.io', 'a1@held.io']) {
      const own = aEvents.filter((e) => e.email === email);
      expect(contact(email), email).toEqual({ uses: own.length, last: own.at(-1)?.properties.n });
    }
    await waitFor(async () => (await fx.redis.llen(parkList)) === 0, { description: "A's park emptied" });
    expect(await suspendedAccountsMetric()).toBe(0);
    for (const e of bEvents) expect(contact(e.email as string), e.email as string).toEqual({ uses: 1, last: e.properties.n });
  });

  it('holds an event that was being coalesced when the suspension landed before the newer ones', async () => {
    const c = await account(`Coalescing ${uniqueSuffix()}`);
    await waitFor(() => sinkView.crmCredential(c, 'hooks') && sinkView.currentMapping(c), { description: "the sink's control plane has C's mapping" });
    switched.set(c, false);
    const [first, second] = [fx.event(c, 'Used', 'c@order.io', { n: 'first' }, 0), fx.event(c, 'Used', 'c@order.io', { n: 'second' }, 1)];
    await fx.produce([first]);
    // Admitted (the sink asked about C) and now in the coalescer for 1.5 s: the suspension lands, then the second event.
    await waitFor(() => (checks.get(c) ?? 0) >= 1, { description: 'the first event of C admitted', intervalMs: 10 });
    switched.set(c, true);
    await fx.produce([second]);

    const parkList = `${fx.redisKeyPrefix}crm:park:{parked}:list:${encodeURIComponent(c)}`;
    const parked = await waitFor(
      async () => {
        const raws = await fx.redis.lrange(parkList, 0, -1);
        return raws.length === 2 ? raws.map((raw) => (JSON.parse((JSON.parse(raw) as { v: string }).v) as { eventId: string }).eventId) : undefined;
      },
      { description: "both events of C held in the park (calls to C's CRM: see below)" },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; calls to C's CRM: ${JSON.stringify(callsTo(c).map((call) => call.status))}`);
    });
    expect(parked, 'arrival order in the park').toEqual([first.eventId, second.eventId]);
    expect(callsTo(c), "calls to C's CRM while suspended").toEqual([]);

    switched.set(c, false);
    await fx.settled([first, second]);
    expect(contact('c@order.io')).toEqual({ uses: 2, last: 'second' });
  });
});

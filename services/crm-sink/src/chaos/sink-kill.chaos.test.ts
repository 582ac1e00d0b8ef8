/**
 * Real servers: Kafka and Redis (shared, never stopped here); the fake HubSpot in this process,
 * over real HTTP; the crm-sink as real OS processes (src/main.ts), configured by environment and
 * reading its mapping and credential from the control plane. Guarantee 2 of docs/architecture.md for the
 * CRM: 3,000 events for 8 contacts and 3 companies, through a mapping with increment, max,
 * append, set, setOnce and activities, while the sink is killed with SIGKILL three times:
 *   1. while a contact upsert (the write of increments the ledger already applied) is in flight
 *      at the CRM, which is slow (every call answered 100 ms late);
 *   2. right after a contact upsert was answered 200, before the flush finished and committed;
 *   3. right after a batch of notes was created (201), before the sink marked them created.
 * Each time a new process takes over the group; the last one meets a CRM that answers at once
 * again (and HubSpot's 100 requests per 10 s), so redoing a batch of notes must stay within it. The same events go through a clean run (own
 * topics, Redis prefix, account and fake CRM; no kills, no delay). The final CRM records of
 * both runs must be equal field by field, and equal to what the events say computed here
 * independently: every increment the number of matching events, lists in event order, one note
 * per (event, rule) with an activity.
 */
import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { afterAll, describe, expect, it } from 'vitest';
import { topicMessages } from '@ingest/testkit/processor';
import type { FakeCall } from '@ingest/testkit/fake-crm';
import { createSinkRun, crmSnapshot, type SinkRun } from './sink-run.fixture.js';
import type { SinkProcess } from '@ingest/testkit';

const TOTAL = 3_000;
const WAVE = 50;
const WAVE_EVERY_MS = 300;
const CRM_DELAY_MS = 100;
const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);
const PARTITIONS = 3;

const DOMAINS = ['acme.io', 'globex.io', 'initech.io'];
const CONTACTS = Array.from({ length: 8 }, (_, i) => ({ email: `user${i}@${DOMAINS[i % DOMAINS.length]}`, partition: i % PARTITIONS }));

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-chaos' },
  rules: [
    {
      id: 'signup',
      when: { eventName: 'Signed Up' },
      object: 'contact',
      actions: [
        { op: 'set', field: 'plan', from: { property: 'plan' } },
        { op: 'setOnce', field: 'first_source', from: { property: 'source' } },
      ],
      activity: { type: 'signup', title: 'Signed up from {{properties.source}}' },
    },
    {
      id: 'page-view',
      when: { eventName: 'Page Viewed' },
      object: 'contact',
      actions: [
        { op: 'increment', field: 'page_views' },
        { op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } },
        { op: 'set', field: 'last_page', from: { property: 'path' } },
      ],
    },
    {
      id: 'feature',
      when: { eventName: 'Feature Used' },
      object: 'contact',
      actions: [
        { op: 'increment', field: 'feature_uses', by: 2 },
        { op: 'append', field: 'features_used', from: { property: 'feature' } },
        { op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } },
      ],
      activity: { type: 'feature', title: 'Used {{properties.feature}}' },
    },
    { id: 'plan', when: { eventName: 'Plan Changed' }, object: 'contact', actions: [{ op: 'set', field: 'plan', from: { property: 'plan' } }] },
    {
      id: 'company-usage',
      when: { eventName: ['Page Viewed', 'Feature Used'] },
      object: 'company',
      actions: [
        { op: 'increment', field: 'usage_events' },
        { op: 'max', field: 'last_active_at', from: { event: 'timestamp' } },
      ],
    },
    {
      id: 'company-signup',
      when: { eventName: 'Signed Up' },
      object: 'company',
      actions: [{ op: 'increment', field: 'signups' }],
      activity: { type: 'company_signup', title: 'New signup: {{email}}' },
    },
  ],
};
const ACTIVITY_RULES = new Set(['signup', 'feature', 'company-signup']);

/** Which rules of `mapping` an event matches: written out here, not taken from the sink's planner. */
function rulesOf(name: string): string[] {
  const rules: Record<string, string[]> = {
    'Signed Up': ['signup', 'company-signup'],
    'Page Viewed': ['page-view', 'company-usage'],
    'Feature Used': ['feature', 'company-usage'],
    'Plan Changed': ['plan'],
  };
  return rules[name] ?? [];
}

/** Deterministic pseudo-random numbers (mulberry32), so both runs and every rerun see the same events. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type TestEvent = { record: Omit<EventRecord, 'accountId'>; partition: number };

/** Each contact signs up first; then page views, feature uses, plan changes and repeated sign-ups, timestamps jittered. */
function makeEvents(): TestEvent[] {
  const rnd = random(20261120);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rnd() * items.length)] as T;
  return Array.from({ length: TOTAL }, (_, n) => {
    const contact = n < CONTACTS.length ? (CONTACTS[n] as (typeof CONTACTS)[number]) : pick(CONTACTS);
    const r = n < CONTACTS.length ? 1 : rnd();
    const [eventName, properties]: [string, Record<string, unknown>] =
      r < 0.6
        ? ['Page Viewed', { path: `/docs/${Math.floor(rnd() * 40)}` }]
        : r < 0.85
          ? ['Feature Used', { feature: pick(['export', 'alerts', 'sso', 'api', 'reports']) }]
          : r < 0.95
            ? ['Plan Changed', { plan: pick(['free', 'pro', 'growth']) }]
            : ['Signed Up', { plan: pick(['free', 'pro']), source: pick(['ads', 'seo', 'partner', 'event']) }];
    return {
      partition: contact.partition,
      record: {
        v: 1,
        eventId: `ev-${n}`,
        eventName,
        email: contact.email,
        domain: contact.email.split('@')[1] as string,
        // Up to 10 minutes out of order, so `max` is not simply the last event's time.
        timestampMs: T0 + n * 1_000 + Math.floor(rnd() * 600_000),
        receivedAtMs: Date.now(),
        properties,
        source: 'api',
        jobId: null,
      },
    } satisfies TestEvent;
  });
}

/** The CRM state the events must produce, computed from the events alone (HubSpot stores strings). */
function expectedState(events: TestEvent[]) {
  const contacts: Record<string, Record<string, string>> = {};
  const companies: Record<string, Record<string, string>> = {};
  const max = (current: string | undefined, ms: number) => String(Math.max(Number(current ?? -Infinity), ms));
  // A set field takes the value of its newest event by event time (ties: the greater eventId in byte order).
  const versions = new Map<string, [number, string]>();
  const newest = (field: string, e: { timestampMs: number; eventId: string }): boolean => {
    const stored = versions.get(field);
    const wins = !stored || e.timestampMs > stored[0] || (e.timestampMs === stored[0] && Buffer.compare(Buffer.from(e.eventId), Buffer.from(stored[1])) >= 0);
    if (wins) versions.set(field, [e.timestampMs, e.eventId]);
    return wins;
  };
  const count = (current: string | undefined, by: number) => String(Number(current ?? 0) + by);
  for (const { record: e } of events) {
    const email = e.email as string;
    const domain = e.domain as string;
    const c = (contacts[email] ??= { email });
    const co = (companies[domain] ??= { domain });
    const p = e.properties as Record<string, string>;
    if (e.eventName === 'Signed Up') {
      if (newest(`${email}/plan`, e)) c.plan = p.plan as string;
      c.first_source ??= p.source as string;
      co.signups = count(co.signups, 1);
    } else if (e.eventName === 'Plan Changed') {
      if (newest(`${email}/plan`, e)) c.plan = p.plan as string;
    } else {
      if (e.eventName === 'Page Viewed') {
        c.page_views = count(c.page_views, 1);
        if (newest(`${email}/last_page`, e)) c.last_page = p.path as string;
      } else {
        c.feature_uses = count(c.feature_uses, 2);
        c.features_used = c.features_used === undefined ? (p.feature as string) : `${c.features_used};${p.feature}`;
      }
      c.last_seen_at = max(c.last_seen_at, e.timestampMs);
      co.usage_events = count(co.usage_events, 1);
      co.last_active_at = max(co.last_active_at, e.timestampMs);
    }
  }
  const activityKeys = events.flatMap(({ record: e }) =>
    rulesOf(e.eventName)
      .filter((r) => ACTIVITY_RULES.has(r))
      .map((r) => `crm:<account>:${e.eventId}:${r}`),
  );
  return { contacts, companies, activityKeys: activityKeys.sort() };
}

const sinkEnv = {
  // The broker's smallest session timeout (group.min.session.timeout.ms): a process started after
  // a SIGKILL gets its partitions once the group gives up on the dead member, 6 s instead of the
  // default 30 s each time (CI time). The dead member never comes back, so the kill still outlasts it.
  KAFKA_SESSION_TIMEOUT_MS: '6000',
  CRM_COALESCE_WINDOW_MS: '200',
  CRM_LEDGER_TTL_SECONDS: '3600',
  CRM_SYNC_STATE_TTL_SECONDS: '3600',
  CRM_RETRY_BASE_DELAY_MS: '100',
  CRM_RETRY_MAX_DELAY_MS: '2000',
  CRM_SINK_PARTITIONS_CONCURRENCY: '3',
  SHUTDOWN_TIMEOUT_MS: '5000',
};

const isWrite = (call: FakeCall, object: 'contacts' | 'companies') => {
  if (call.path !== `/crm/v3/objects/${object}/batch/upsert`) return false;
  // The activity call's upsert carries only the key (to learn record ids); a write carries values.
  const inputs = (call.body as { inputs?: { properties?: Record<string, unknown> }[] }).inputs ?? [];
  return inputs.some((i) => Object.keys(i.properties ?? {}).some((k) => k !== 'email' && k !== 'domain'));
};

interface KillPlan {
  what: string;
  phase: 'received' | 'answered';
  matches(call: FakeCall): boolean;
}
const KILLS: KillPlan[] = [
  { what: 'contact upsert in flight', phase: 'received', matches: (c) => isWrite(c, 'contacts') },
  { what: 'contact upsert just answered 200', phase: 'answered', matches: (c) => isWrite(c, 'contacts') && c.status === 200 },
  { what: 'notes just created (201)', phase: 'answered', matches: (c) => c.path === '/crm/v3/objects/notes/batch/create' && c.status === 201 },
];

interface KillReport {
  what: string;
  victim: string;
  atMs: number;
  produced: number;
  callsBefore: number;
  inFlight: string[];
  committed: number;
  /** Event-rules whose ledger key was set while their offset was not committed: redelivered, they must change nothing. */
  appliedUncommitted: number;
  /** Notes in the CRM the sink had not marked as created: re-sent after the restart, refused by their unique key. */
  notesUnmarked: number;
}

const runs: SinkRun[] = [];

afterAll(async () => {
  await Promise.allSettled(runs.map((r) => r.cleanup()));
});

describe('crm-sink killed with SIGKILL mid-flush', () => {
  it('applies no increment twice and loses nothing: the CRM ends as after a clean run', { timeout: 420_000 }, async () => {
    const started = Date.now();
    const note = (what: string) => console.log(`sink-kill ${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);
    const events = makeEvents();
    const expected = expectedState(events);
    // Every kind of effect occurs, for every contact and company.
    expect(Object.values(expected.contacts).every((c) => c.page_views && c.feature_uses && c.first_source && c.plan)).toBe(true);
    expect(Object.keys(expected.companies)).toHaveLength(DOMAINS.length);

    // The clean run: same events, no kills, a CRM that answers at once. Beside the chaos run
    // (CI time): they share nothing (own topics, group, Redis prefix, account and fake CRM).
    const cleanRun = (async () => {
      const clean = await createSinkRun('clean', mapping, { env: sinkEnv });
      runs.push(clean);
      await clean.produce(events);
      await clean.fleet.start();
      await clean.drained(120_000);
      note(`clean run synced ${TOTAL} events with ${clean.crm.calls.length} CRM calls`);
      return clean;
    })();
    cleanRun.catch(() => {}); // awaited below; this only keeps an early failure from being unhandled

    // The chaos run. The fake calls `onCall` synchronously: the kill is sent in the very
    // callback that sees the matching request arrive or its answer leave.
    let current: SinkProcess | undefined;
    let callsAtStart = 0;
    let armed: { plan: KillPlan; fired: (report: Pick<KillReport, 'victim' | 'atMs' | 'callsBefore' | 'inFlight'>) => void } | undefined;
    const chaos: SinkRun = await createSinkRun('chaos', mapping, {
      env: sinkEnv,
      onCall: (call, phase) => {
        const a = armed;
        if (!a || !current || phase !== a.plan.phase || !a.plan.matches(call)) return;
        armed = undefined;
        chaos.fleet.killNow(current);
        a.fired({
          victim: current.name,
          atMs: Date.now(),
          callsBefore: chaos.crm.calls.length,
          // This process's calls only: one in flight at an earlier kill never gets its answer.
          inFlight: chaos.crm.calls
            .slice(callsAtStart)
            .filter((c) => c.status === 0)
            .map((c) => `${c.method} ${c.path} (${c.batchSize} inputs)`),
        });
      },
    });
    runs.push(chaos);
    chaos.crm.failNext({ delayMs: CRM_DELAY_MS, times: 1_000_000 });
    current = await chaos.fleet.start();
    note(`chaos run: ${current.name} ready`);

    let producedWaves = 0;
    const producing = (async () => {
      for (let i = 0; i < events.length; i += WAVE) {
        await chaos.produce(events.slice(i, i + WAVE));
        producedWaves += 1;
        await new Promise((r) => setTimeout(r, WAVE_EVERY_MS));
      }
    })();
    producing.catch(() => {}); // awaited below; this only keeps an early failure from being unhandled

    const kills: KillReport[] = [];
    for (const [i, plan] of KILLS.entries()) {
      if (i === 0) {
        // The first kill once a fifth of the events is in Kafka, so the stream is well under way.
        while (producedWaves * WAVE < TOTAL / 5) await new Promise((r) => setTimeout(r, 50));
      }
      const fired = new Promise<Pick<KillReport, 'victim' | 'atMs' | 'callsBefore' | 'inFlight'>>((resolve) => (armed = { plan, fired: resolve }));
      let timer: NodeJS.Timeout | undefined;
      const killed = await Promise.race([fired, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), 90_000)))]).finally(() =>
        clearTimeout(timer),
      );
      if (!killed) throw new Error(`kill ${i + 1} (${plan.what}) never triggered: no such CRM call within 90 s`);
      await current.exited;
      const uncommitted = await chaos.uncommitted();
      const ledgerKeys = uncommitted.flatMap((e) => rulesOf(e.record.eventName).map((r) => chaos.ledgerKeyOf(e.record.eventId, r)));
      const noteKeys = [...chaos.crm.records('hubspot', 'notes').keys()];
      const report: KillReport = {
        what: plan.what,
        ...killed,
        produced: chaos.produced.length,
        committed: chaos.produced.length - uncommitted.length,
        appliedUncommitted: await chaos.countKeys(ledgerKeys, 'ledger'),
        notesUnmarked: noteKeys.length - (await chaos.countKeys(noteKeys, 'activity')),
      };
      kills.push(report);
      note(
        `SIGKILL ${report.victim} (${plan.what}): ${report.callsBefore} CRM calls so far, in flight: [${report.inFlight.join(', ')}]; ` +
          `${report.committed}/${report.produced} offsets committed; ${report.appliedUncommitted} event-rules applied but uncommitted; ` +
          `${report.notesUnmarked} notes created but unmarked`,
      );
      if (i === KILLS.length - 1) chaos.crm.clearFaults();
      callsAtStart = chaos.crm.calls.length;
      current = await chaos.fleet.start();
      note(`${current.name} ready`);
    }
    await producing;
    note(`all ${TOTAL} events produced`);
    await chaos.drained(180_000);
    note('chaos run drained');
    const clean = await cleanRun;

    // The kills landed where they matter: mid-flight, with applied but uncommitted work.
    expect(kills[0]?.inFlight.some((c) => c.includes('/contacts/batch/upsert'))).toBe(true);
    for (const k of kills) {
      expect(k.committed, `${k.what}: some offsets uncommitted`).toBeLessThan(k.produced);
      expect(k.appliedUncommitted, `${k.what}: ledger entries to absorb`).toBeGreaterThan(0);
    }
    expect(chaos.fleet.unexpectedExits()).toEqual([]);

    // Every event synced, none dead-lettered, in both runs.
    for (const run of [clean, chaos]) {
      expect(new Set((await run.syncStates()).map((s) => s.state))).toEqual(new Set(['synced']));
      expect(await topicMessages(run.kafka.kafka, run.kafka.topic('crmDeadLetters'))).toBe(0);
    }

    // The CRM after the kills equals the CRM after the clean run, and both equal the events' sum.
    const chaosState = crmSnapshot(chaos);
    const cleanState = crmSnapshot(clean);
    expect(chaosState.contacts).toEqual(cleanState.contacts);
    expect(chaosState.companies).toEqual(cleanState.companies);
    expect(chaosState.notes).toEqual(cleanState.notes);
    expect(chaosState.contacts).toEqual(expected.contacts);
    expect(chaosState.companies).toEqual(expected.companies);
    expect(Object.keys(chaosState.notes).sort()).toEqual(expected.activityKeys);
    for (const [key, n] of Object.entries(chaosState.notes)) {
      const [eventId, rule] = key.split(':').slice(2);
      const event = events.find((e) => e.record.eventId === eventId)?.record;
      const target = rule === 'company-signup' ? `company:${event?.domain}` : `contact:${event?.email}`;
      expect(n.associations, key).toEqual([target]);
    }

    const calls = chaos.crm.calls;
    const refusedNotes = calls.filter((c) => c.path.endsWith('/notes/batch/create') && c.status === 409).length;
    const firstKill = kills[0]?.callsBefore ?? calls.length;
    const laterWrites = calls.slice(firstKill).filter((c) => isWrite(c, 'contacts') || isWrite(c, 'companies')).length;
    console.log(
      [
        'sink-kill summary:',
        `events: ${TOTAL} for ${CONTACTS.length} contacts and ${DOMAINS.length} companies; expected ${expected.activityKeys.length} notes`,
        `kills: ${kills.length} SIGKILLs (${kills.map((k) => k.what).join('; ')}), ${kills.length + 1} sink processes`,
        `CRM calls: chaos run ${calls.length} (answered ${CRM_DELAY_MS} ms late until the last restart), clean run ${clean.crm.calls.length}; ` +
          `429s in the chaos run: ${calls.filter((c) => c.status === 429).length}`,
        `absorbed: ${kills.reduce((n, k) => n + k.appliedUncommitted, 0)} redeliveries of event-rules applied before a kill (ledger hits, summed over the kills), ` +
          `${kills.reduce((n, k) => n + k.notesUnmarked, 0)} notes created but unmarked at a kill (${refusedNotes} note batches refused 409 as duplicates, then read and only the missing created), ` +
          `${laterWrites} record writes (absolute values) after the first kill`,
        `final: ${Object.keys(chaosState.contacts).length} contacts, ${Object.keys(chaosState.companies).length} companies, ${Object.keys(chaosState.notes).length} notes, equal to the clean run`,
        `took ${Math.round((Date.now() - started) / 1000)} s`,
      ].join('\n'),
    );
  });
});

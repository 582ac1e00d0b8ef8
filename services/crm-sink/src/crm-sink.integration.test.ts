/**
 * Real servers: Kafka and Redis. The CRM is the in-memory double of adapters/memory-crm.fixture.ts
 * (the sink's logic under test; the HTTP adapters have their own tests against the fake CRM).
 * Events are produced to events.unique directly, as the dedupe step would.
 */
import type { EventRecord } from '@ingest/schemas';
import { committedOffsets, createMetricsRegistry, readDeadLetters } from '@ingest/platform';
import { type CrmCredential } from '@ingest/domain';
import { sampleValue, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryCrm, createStaticMappings, type MemoryCrm } from './adapters/memory-crm.fixture.js';
import { createSinkFixture, everyKindMapping, type SinkFixture, T0 } from './crm-sink.fixture.js';

// One sink serves every test; each test has accounts (and a memory CRM per account) of its own.
const ACCOUNTS = ['acc_rules', 'acc_volume', 'acc_slow', 'acc_fast', 'acc_replay', 'acc_twice', 'acc_reject'];
// A mapping whose credential was never stored; and acc_none has no mapping at all.
const NO_CREDENTIAL = 'acc_nocred';
const crms = new Map<string, MemoryCrm>(ACCOUNTS.map((a) => [a, createMemoryCrm({ maxBatchSize: a === 'acc_volume' ? 4 : 100 })]));
let fx: SinkFixture;
let groupId: string;
const sinkMetrics = createMetricsRegistry('crm-sink-test');

function crmOf(accountId: string): MemoryCrm {
  return crms.get(accountId) as MemoryCrm;
}

beforeAll(async () => {
  fx = await createSinkFixture({
    mappings: createStaticMappings({
      ...Object.fromEntries(
        ACCOUNTS.map((a) => [a, { mapping: everyKindMapping(`${a}-hubspot`), credential: { type: 'hubspot', accessToken: a } satisfies CrmCredential }]),
      ),
      [NO_CREDENTIAL]: { mapping: everyKindMapping('never-stored') },
    }),
    createAdapter: (credential) => crmOf(credential.type === 'hubspot' ? credential.accessToken : '').adapter,
  });
  groupId = `crm-sink-${uniqueSuffix()}`;
  // A userId-only event waits 1 s for its identify, then is skipped identity_unresolved.
  await fx.startSink(groupId, { metrics: sinkMetrics, identityWait: { waitMs: 1_000, maxPerAccount: 100, pollMs: 100 } });
});

afterAll(async () => {
  await fx?.cleanup();
});

const event = (...args: Parameters<SinkFixture['event']>) => fx.event(...args);
const produce = (records: EventRecord[], topic?: string) => fx.produce(records, topic);
const states = (records: EventRecord[]) => fx.states(records);
const allSettled = (records: EventRecord[]) => fx.settled(records);

describe('crm-sink', () => {
  it('applies a mapping with several rule kinds: exactly the expected CRM state', async () => {
    const crm = crmOf('acc_rules');
    // The CRM already knows alice: counters and setOnce continue from its values.
    crm.records.set('contact:alice@acme.com', { page_views: 10, first_source: 'seo', pages: '/old' });
    const events = [
      event('acc_rules', 'Signed Up', 'alice@acme.com', { plan: 'pro', source: 'ads' }, 5, 'acme.com'),
      event('acc_rules', 'Page Viewed', 'alice@acme.com', { path: '/a' }, 7),
      event('acc_rules', 'Page Viewed', 'alice@acme.com', { path: '/b' }, 9),
      event('acc_rules', 'Page Viewed', 'alice@acme.com', { path: '/c' }, 8),
      event('acc_rules', 'Signed Up', 'bob@acme.com', { plan: 'free', source: 'ads' }, 1, 'acme.com'),
      event('acc_rules', 'Signed Up', 'carol@acme.com', { plan: 'team', source: 'partner' }, 2, 'acme.com'),
      event('acc_rules', 'Newsletter Opened', 'alice@acme.com', {}, 3),
      event('acc_rules', 'Page Viewed', null, { path: '/x' }, 3),
      // A Segment message named by its userId only: stored, and skipped here with its own reason (docs/segment.md).
      { ...event('acc_rules', 'Page Viewed', null, { path: '/y' }, 4), userId: 'seg-user-1' },
    ];
    await produce(events);
    await allSettled(events);

    expect(crm.record('contact', 'alice@acme.com')).toEqual({
      plan: 'pro',
      first_source: 'seo',
      first_seen_at: T0 + 5 * 60_000,
      page_views: 13,
      last_seen_at: T0 + 9 * 60_000,
      pages: '/old;/a;/b;/c',
    });
    expect(crm.record('contact', 'bob@acme.com')).toEqual({ plan: 'free', first_source: 'ads', first_seen_at: T0 + 60_000 });
    // Keyed by identity, bob's and carol's events may reach the company in either order: the
    // increment is exact either way, and only paid plans match the company rule.
    expect(crm.record('company', 'acme.com')).toMatchObject({ paid_signups: 2 });
    expect(['pro', 'team']).toContain(crm.record('company', 'acme.com')?.plan);
    expect(crm.activities.map((a) => [a.key, a.title]).sort()).toEqual([
      ['alice@acme.com', 'Signed up on pro'],
      ['bob@acme.com', 'Signed up on free'],
      ['carol@acme.com', 'Signed up on team'],
    ]);
    expect(new Set(crm.activities.map((a) => a.idempotencyKey)).size).toBe(3);
    expect((await states(events)).map((s) => (s.state === 'skipped' ? `skipped:${s.reason}` : s.state))).toEqual([
      'synced',
      'synced',
      'synced',
      'synced',
      'synced',
      'synced',
      'skipped:no_rule_matched',
      'skipped:missing_identity',
      'skipped:identity_unresolved',
    ]);
    const skipped = (reason: string) => sinkMetrics.metrics().then((text) => sampleValue(text, 'ingest_crm_sync_skipped_total', { reason }));
    // The skips are counted after their states are written (sync.planner.ts recordSkipped), a
    // moment after `states` shows them: wait for the count, then hold it to exactly one.
    let counted: number | undefined;
    await waitFor(async () => (counted = await skipped('identity_unresolved')) !== undefined || undefined, {
      description: () => `the identity_unresolved skip counted (last read ${String(counted)})`,
    });
    expect(await skipped('identity_unresolved')).toBe(1);
    expect(await skipped('missing_identity')).toBeGreaterThanOrEqual(1);
  });

  it('coalesces 1,000 events for 10 contacts into few batched calls within the rate limit', async () => {
    const crm = crmOf('acc_volume');
    const events = Array.from({ length: 1000 }, (_, i) => event('acc_volume', 'Page Viewed', `user${i % 10}@volume.io`, { path: `/p${i % 3}` }, i));
    await produce(events);
    await allSettled(events);

    for (let u = 0; u < 10; u += 1) expect(crm.record('contact', `user${u}@volume.io`)).toMatchObject({ page_views: 100 });
    const upserts = crm.calls.filter((c) => c.operation === 'upsert');
    expect(upserts.every((c) => c.size <= 4)).toBe(true);
    expect(upserts.reduce((n, c) => n + c.size, 0)).toBeLessThan(200);
    // burst 5 + 20/s: no 1-second window holds more than 25 calls.
    for (const c of crm.calls) expect(crm.calls.filter((d) => d.atMs >= c.atMs && d.atMs < c.atMs + 1000).length).toBeLessThanOrEqual(25);
  });

  it('waits out a 429 and 503s for one account while another keeps syncing; everything arrives once', async () => {
    const slow = crmOf('acc_slow');
    const fast = crmOf('acc_fast');
    slow.failNext('rate_limited', 1, { retryAfterMs: 2_000 });
    slow.failNext('transient', 2, { message: 'HTTP 503 Service Unavailable' });
    const slowEvents = Array.from({ length: 20 }, (_, i) => event('acc_slow', 'Page Viewed', `s${i % 2}@slow.io`, { path: '/s' }, i));
    const fastEvents = Array.from({ length: 20 }, (_, i) => event('acc_fast', 'Page Viewed', `f${i % 2}@fast.io`, { path: '/f' }, i));
    await produce(slowEvents.flatMap((s, i) => [s, fastEvents[i] as EventRecord]));

    await allSettled(fastEvents);
    // The fast account is done while the slow one still waits for its Retry-After.
    expect((await states(slowEvents)).some((s) => s.state === 'pending')).toBe(true);
    expect(fast.record('contact', 'f0@fast.io')).toMatchObject({ page_views: 10 });

    await allSettled(slowEvents);
    expect((await states(slowEvents)).every((s) => s.state === 'synced')).toBe(true);
    expect(slow.record('contact', 's0@slow.io')).toMatchObject({ page_views: 10 });
    expect(slow.record('contact', 's1@slow.io')).toMatchObject({ page_views: 10 });
    const failedAt = slow.calls.find((c) => c.failed === 'rate_limited')?.atMs ?? 0;
    const next = slow.calls.find((c) => c.atMs > failedAt && c.failed !== 'rate_limited');
    expect((next?.atMs ?? 0) - failedAt).toBeGreaterThanOrEqual(1_900);
  });

  it('delivers the same events again (replay, restart) without double increments or activities', async () => {
    const crm = crmOf('acc_replay');
    const events = [
      event('acc_replay', 'Signed Up', 'dana@replay.io', { plan: 'pro', source: 'ads' }, 1, 'replay.io'),
      ...Array.from({ length: 5 }, (_, i) => event('acc_replay', 'Page Viewed', 'dana@replay.io', { path: `/r${i}` }, 2 + i)),
    ];
    await produce(events);
    await allSettled(events);
    const first = { ...crm.record('contact', 'dana@replay.io') };
    const company = { ...crm.record('company', 'replay.io') };
    expect(first).toMatchObject({ page_views: 5, pages: '/r0;/r1;/r2;/r3;/r4' });
    expect(company).toMatchObject({ paid_signups: 1 });

    const upsertsBefore = crm.calls.filter((c) => c.operation === 'upsert').length;
    await produce(events, fx.kafka.topic('crmReplay'));
    await produce(events);
    await waitFor(() => crm.calls.filter((c) => c.operation === 'upsert').length >= upsertsBefore + 2, { description: 'the repeated writes' });
    expect(crm.record('contact', 'dana@replay.io')).toEqual(first);
    expect(crm.record('company', 'replay.io')).toEqual(company);
    expect(crm.activities.filter((a) => a.key === 'dana@replay.io')).toHaveLength(1);

    // The group's commits cover the work: a new member of the same group has nothing left to redo.
    await waitFor(
      async () => {
        const offsets = await committedOffsets(fx.kafka.kafka, groupId, fx.kafka.topic('eventsUnique'));
        return [...offsets.values()].some((o) => Number(o) > 0);
      },
      { description: 'committed offsets' },
    );
  });

  it('applies an event delivered twice at once (a replay meeting its original) once', async () => {
    const crm = crmOf('acc_twice');
    const events = [
      event('acc_twice', 'Signed Up', 'tom@twice.io', { plan: 'pro', source: 'ads' }, 1, 'twice.io'),
      event('acc_twice', 'Page Viewed', 'tom@twice.io', { path: '/t' }, 2),
    ];
    await Promise.all([produce(events), produce(events, fx.kafka.topic('crmReplay'))]);
    await allSettled(events);
    await waitFor(() => crm.record('company', 'twice.io') !== undefined && crm.activities.length > 0, { description: 'both records written' });
    expect(crm.record('contact', 'tom@twice.io')).toMatchObject({ page_views: 1, pages: '/t', plan: 'pro' });
    expect(crm.record('company', 'twice.io')).toMatchObject({ paid_signups: 1 });
    expect(crm.activities).toHaveLength(1);
  });

  it('dead-letters an event the CRM refuses, with its message, and marks it failed', async () => {
    const crm = crmOf('acc_reject');
    crm.rejectKeys.add('bad@reject.io');
    const events = [
      event('acc_reject', 'Page Viewed', 'bad@reject.io', { path: '/' }, 1),
      event('acc_reject', 'Page Viewed', 'good@reject.io', { path: '/' }, 1),
    ];
    await produce(events);
    await allSettled(events);
    const [bad, good] = await states(events);
    expect(bad).toMatchObject({ state: 'failed', reason: 'INVALID_EMAIL: bad@reject.io is not accepted' });
    expect(good?.state).toBe('synced');
    const letters = await waitFor(
      async () => {
        const found = await readDeadLetters(fx.kafka.kafka, fx.kafka.topic('crmDeadLetters'), {
          limit: 10,
          logger: testLogger(),
          filter: (e) => e.code === 'crm_record_rejected',
        });
        return found.length > 0 ? found : undefined;
      },
      { description: 'the dead letter' },
    );
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ code: 'crm_record_rejected', sourceTopic: fx.kafka.topic('eventsUnique'), consumer: 'crm-sink' });
    expect(letters[0]?.reason).toContain(`event ${events[0]?.eventId}`);
    expect(JSON.parse(letters[0]?.value?.toString() ?? '{}')).toMatchObject({ eventId: events[0]?.eventId });
  });

  it('dead-letters a message that is no event record and goes on with the next', async () => {
    await fx.producer.send(fx.kafka.topic('eventsUnique'), [{ key: 'acc_reject:poison', value: '{"v":1,"accountId":' }]);
    const after = [event('acc_reject', 'Page Viewed', 'after@reject.io', { path: '/' }, 3)];
    await produce(after);
    await allSettled(after);
    const letters = await waitFor(
      async () => {
        const found = await readDeadLetters(fx.kafka.kafka, fx.kafka.topic('crmDeadLetters'), {
          limit: 10,
          logger: testLogger(),
          filter: (e) => e.code === 'invalid_json',
        });
        return found.length > 0 ? found : undefined;
      },
      { description: 'the poison message dead-lettered' },
    );
    expect(letters).toHaveLength(1);
    expect(letters[0]?.key?.toString()).toBe('acc_reject:poison');
  });

  it('skips events of accounts without a mapping and dead-letters those whose credential is missing', async () => {
    const events = [event('acc_none', 'Page Viewed', 'x@none.io', { path: '/' }, 1), event(NO_CREDENTIAL, 'Page Viewed', 'y@nocred.io', { path: '/' }, 1)];
    await produce(events);
    await allSettled(events);
    expect(await states(events)).toEqual([
      expect.objectContaining({ state: 'skipped', reason: 'no_mapping' }),
      expect.objectContaining({ state: 'failed', reason: 'no stored credential named never-stored' }),
    ]);
    const letters = await waitFor(
      async () => {
        const found = await readDeadLetters(fx.kafka.kafka, fx.kafka.topic('crmDeadLetters'), {
          limit: 10,
          logger: testLogger(),
          filter: (e) => e.code === 'crm_credential_missing',
        });
        return found.length > 0 ? found : undefined;
      },
      { description: 'the dead letter' },
    );
    expect(letters.map((l) => l.reason)).toEqual([`account ${NO_CREDENTIAL} event ${events[1]?.eventId}: no stored credential named never-stored`]);
  });
});

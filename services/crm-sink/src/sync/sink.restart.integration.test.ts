/**
 * Real servers: Kafka and Redis; the in-memory CRM double. A sink stopped while an account waits
 * on its CRM commits nothing for that work; the next member of the group redoes it, and the
 * ledger keeps what the first one had applied from being applied twice.
 */
import { committedOffsets } from '@ingest/platform';
import { type CrmCredential } from '@ingest/domain';
import { uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryCrm, createStaticMappings } from '../adapters/memory-crm.fixture.js';
import { createSinkFixture, everyKindMapping, type SinkFixture } from '../crm-sink.fixture.js';

const crm = createMemoryCrm();
let fx: SinkFixture;

beforeAll(async () => {
  const credential: CrmCredential = { type: 'hubspot', accessToken: 'tok' };
  fx = await createSinkFixture({
    mappings: createStaticMappings({ acc_restart: { mapping: everyKindMapping('main'), credential } }),
    createAdapter: () => crm.adapter,
  });
});

afterAll(async () => {
  await fx?.cleanup();
});

describe('crm-sink stop and restart', () => {
  it('leaves waiting work uncommitted on stop; the next member syncs it once', async () => {
    const groupId = `crm-sink-${uniqueSuffix()}`;
    const first = await fx.startSink(groupId);
    // Every field the sink owns exists after this, so the next flush calls upsert without a read.
    const warmup = [
      fx.event('acc_restart', 'Signed Up', 'rae@restart.io', { plan: 'free', source: 'seo' }, 0),
      fx.event('acc_restart', 'Page Viewed', 'rae@restart.io', { path: '/w' }, 0),
    ];
    await fx.produce(warmup);
    await fx.settled(warmup);

    // The next upsert is answered 429 with a Retry-After within the hold (TEST_PARK: 5 s): the
    // account waits in memory, mid-flush, after its ledger entries were applied. (A longer one
    // parks the account, which crm-sink.isolation.integration.test.ts covers.)
    crm.failNext('rate_limited', 1, { retryAfterMs: 4_000 });
    const events = [
      fx.event('acc_restart', 'Signed Up', 'rae@restart.io', { plan: 'pro', source: 'ads' }, 1),
      ...Array.from({ length: 4 }, (_, i) => fx.event('acc_restart', 'Page Viewed', 'rae@restart.io', { path: `/p${i}` }, 2 + i)),
    ];
    await fx.produce(events);
    const limited = await waitFor(() => crm.calls.find((c) => c.failed === 'rate_limited'), { description: 'the 429' });
    expect(limited.operation).toBe('upsert');
    await first.stop();

    const topic = fx.kafka.topic('eventsUnique');
    const committed = await committedOffsets(fx.kafka.kafka, groupId, topic);
    expect([...committed.values()].reduce((n, o) => n + Math.max(0, Number(o)), 0)).toBe(2);
    expect((await fx.states(events)).map((s) => s.state)).toEqual(['pending', 'pending', 'pending', 'pending', 'pending']);

    await fx.startSink(groupId);
    await fx.settled(events);
    expect(crm.record('contact', 'rae@restart.io')).toEqual({
      page_views: 5,
      last_seen_at: Date.UTC(2026, 10, 20, 12, 5),
      pages: '/w;/p0;/p1;/p2;/p3',
      plan: 'pro',
      first_source: 'seo',
      first_seen_at: Date.UTC(2026, 10, 20, 12, 0),
    });
    expect(crm.activities.map((a) => a.title)).toEqual(['Signed up on free', 'Signed up on pro']);
    await waitFor(async () => [...(await committedOffsets(fx.kafka.kafka, groupId, topic)).values()].reduce((n, o) => n + Math.max(0, Number(o)), 0) === 7, {
      description: 'all seven offsets committed',
    });
  });
});

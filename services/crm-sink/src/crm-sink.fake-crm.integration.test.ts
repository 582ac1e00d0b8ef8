/**
 * Real servers: Kafka and Redis; the CRM is the fake HubSpot of the test kit (@ingest/testkit/fake-crm) over
 * real HTTP, called by the real HubSpot adapter. Events are produced to events.unique directly.
 */
import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { createMetricsRegistry, type Registry } from '@ingest/platform';
import { uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from './adapters/index.js';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { createStaticMappings } from './adapters/memory-crm.fixture.js';
import { createSinkFixture, type SinkFixture } from './crm-sink.fixture.js';

const ACCOUNTS = ['acc_volume', 'acc_slow', 'acc_fast'] as const;
const token = (accountId: string) => `tok-${accountId}`;

let fx: SinkFixture;
let crm: FakeCrm;
const metrics: Registry = createMetricsRegistry('crm-sink-test');

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-main' },
  rules: [
    {
      id: 'page',
      when: { eventName: 'Page Viewed' },
      object: 'contact',
      actions: [
        { op: 'increment', field: 'page_views' },
        { op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } },
        { op: 'set', field: 'last_path', from: { property: 'path' } },
      ],
    },
    {
      id: 'signup',
      when: { eventName: 'Signed Up' },
      object: 'contact',
      actions: [{ op: 'setOnce', field: 'first_plan', from: { property: 'plan' } }],
      activity: { type: 'signup', title: 'Signed up on {{properties.plan}}' },
    },
  ],
};

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: ACCOUNTS.map(token) });
  fx = await createSinkFixture({
    mappings: createStaticMappings(
      Object.fromEntries(ACCOUNTS.map((a) => [a, { mapping, credential: { type: 'hubspot' as const, accessToken: token(a), baseUrl: crm.url } }])),
    ),
    createAdapter: (credential) => createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND }),
  });
  await fx.startSink(`crm-sink-${uniqueSuffix()}`, {
    metrics,
    coalesce: { windowMs: 500, maxRecords: 100 },
    // The service defaults, fitted to HubSpot's 100 requests per 10 s (which the fake enforces).
    rate: { ratePerSecond: 9, burst: 10 },
    retry: { maxAttempts: 6, budgetMs: 60_000, baseDelayMs: 100, maxDelayMs: 1_000 },
    maxUnfinishedPerPartition: 2_000,
  });
});

afterAll(async () => {
  await fx?.cleanup();
  await crm?.stop();
});

const event = (accountId: string, eventName: string, email: string, properties: Record<string, unknown>, minute: number) =>
  fx.event(accountId, eventName, email, properties, minute);
const produce = (records: EventRecord[]) => fx.produce(records);
const pending = async (records: EventRecord[]) => (await fx.states(records)).filter((s) => s.state === 'pending').length;

const contact = (email: string) => crm.records('hubspot', 'contacts').get(email)?.properties;
const callsOf = (accountId: string) => crm.calls.filter((c) => c.token === token(accountId));

describe('crm-sink with the HubSpot adapter and the fake CRM', () => {
  it('syncs 1,000 events for 10 contacts in few batched calls, within the batch and rate limits', async () => {
    const events = Array.from({ length: 1000 }, (_, i) => event('acc_volume', 'Page Viewed', `user${i % 10}@volume.io`, { path: `/p${i}` }, i));
    await produce(events);
    await waitFor(async () => (await pending(events)) === 0, { description: 'all 1,000 events synced', timeoutMs: 90_000 });

    for (let u = 0; u < 10; u += 1) {
      expect(contact(`user${u}@volume.io`)).toMatchObject({ page_views: '100', last_path: `/p${990 + u}` });
    }
    const calls = callsOf('acc_volume');
    expect(calls.every((c) => c.batchSize <= 100)).toBe(true);
    expect(calls.filter((c) => c.status === 429)).toEqual([]);
    expect(calls.length).toBeLessThan(40);
  });

  it('waits out a 429 (Retry-After: 2) and 503s for one account while another keeps syncing; all arrives once', async () => {
    crm.failNext({ status: 429, retryAfterSeconds: 2, times: 1, token: token('acc_slow') });
    crm.failNext({ status: 503, times: 2, token: token('acc_slow') });
    const slow = [
      event('acc_slow', 'Signed Up', 'ann@slow.io', { plan: 'pro' }, 0),
      ...Array.from({ length: 10 }, (_, i) => event('acc_slow', 'Page Viewed', 'ann@slow.io', { path: `/s${i}` }, i + 1)),
    ];
    const fast = Array.from({ length: 10 }, (_, i) => event('acc_fast', 'Page Viewed', 'fay@fast.io', { path: `/f${i}` }, i + 1));
    await produce([...slow, ...fast]);

    await waitFor(async () => (await pending(fast)) === 0, { description: 'the fast account synced', timeoutMs: 30_000 });
    expect(await pending(slow)).toBeGreaterThan(0);
    expect(contact('fay@fast.io')).toMatchObject({ page_views: '10' });

    await waitFor(async () => (await pending(slow)) === 0, { description: 'the slow account synced', timeoutMs: 60_000 });
    expect(contact('ann@slow.io')).toMatchObject({ page_views: '10', first_plan: 'pro', last_path: '/s9' });
    const notes = [...crm.records('hubspot', 'notes').values()].filter((n) => JSON.stringify(n.properties).includes('Signed up on pro'));
    expect(notes).toHaveLength(1);
    const calls = callsOf('acc_slow');
    const limited = calls.find((c) => c.status === 429);
    expect(limited).toBeDefined();
    const after = calls.filter((c) => c.at > (limited?.at ?? 0));
    expect(after.length).toBeGreaterThan(0);
    expect(Math.min(...after.map((c) => c.at)) - (limited?.at ?? 0)).toBeGreaterThanOrEqual(1_900);
    expect(calls.filter((c) => c.status === 503)).toHaveLength(2);

    // The same story in the metrics: the 429 and the 503s by adapter and status, the retries, no account paused now.
    const value = async (name: string, labels: Record<string, string>) =>
      (await metrics.getSingleMetric(name)?.get())?.values
        .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
        .reduce((n, v) => n + v.value, 0) ?? 0;
    expect(await value('ingest_crm_calls_total', { adapter: 'hubspot', status: 'rate_limited' })).toBe(1);
    expect(await value('ingest_crm_calls_total', { adapter: 'hubspot', status: 'transient' })).toBe(2);
    expect(await value('ingest_crm_calls_total', { adapter: 'hubspot', operation: 'upsert', status: 'ok' })).toBeGreaterThan(0);
    expect(await value('ingest_crm_retries_total', { kind: 'rate_limited' })).toBe(1);
    expect(await value('ingest_crm_retries_total', { kind: 'transient' })).toBe(2);
    expect(await value('ingest_crm_paused_accounts', {})).toBe(0);
    expect(await value('ingest_consumer_messages_total', { consumer: 'crm-sink', outcome: 'ok' })).toBeGreaterThanOrEqual(1000 + slow.length + fast.length);
    expect(await value('ingest_consumer_batch_failures_total', { consumer: 'crm-sink' })).toBe(0);
    expect(await value('ingest_crm_sync_outcomes_total', { state: 'synced' })).toBe(1000 + slow.length + fast.length);
    const lag = await metrics.getSingleMetric('ingest_crm_sync_lag_seconds')?.get();
    expect(lag?.values.find((v) => (v as { metricName?: string }).metricName === 'ingest_crm_sync_lag_seconds_count')?.value).toBe(
      1000 + slow.length + fast.length,
    );
  });
});

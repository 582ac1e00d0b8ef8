/**
 * Real servers: Kafka and Redis. The CRM is the in-memory double of adapters/memory-crm.fixture.ts.
 * Events are produced to events.unique (and crm.replay, as a dead-letter replay does) directly.
 *
 * Regression: a `set` from an old event (late, or replayed from dead letters) overwrote a value
 * that a newer event had set. Each field now keeps the event time of its last set.
 */
import type { CrmMapping, EventRecord } from '@ingest/schemas';
import type { CrmCredential } from '@ingest/domain';
import { uniqueSuffix } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryCrm, createStaticMappings } from './adapters/memory-crm.fixture.js';
import { createSinkFixture, type SinkFixture, T0 } from './crm-sink.fixture.js';

const ACCOUNT = 'acc_event_time';
const crm = createMemoryCrm();
let fx: SinkFixture;

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'main' },
  rules: [
    {
      id: 'plan',
      when: { eventName: 'Plan Changed' },
      object: 'contact',
      actions: [
        { op: 'set', field: 'plan', from: { property: 'plan' } },
        { op: 'setOnce', field: 'first_plan', from: { property: 'plan' } },
        { op: 'increment', field: 'plan_changes' },
        { op: 'max', field: 'last_change_at', from: { event: 'timestamp' } },
        { op: 'min', field: 'first_change_at', from: { event: 'timestamp' } },
        { op: 'append', field: 'plans', from: { property: 'plan' } },
      ],
    },
  ],
};

beforeAll(async () => {
  fx = await createSinkFixture({
    mappings: createStaticMappings({ [ACCOUNT]: { mapping, credential: { type: 'hubspot', accessToken: 'tok' } satisfies CrmCredential } }),
    createAdapter: () => crm.adapter,
  });
  await fx.startSink(`crm-sink-${uniqueSuffix()}`);
});

afterAll(async () => {
  await fx?.cleanup();
});

const change = (plan: string, minute: number) => fx.event(ACCOUNT, 'Plan Changed', 'ada@time.io', { plan }, minute);
async function sync(records: EventRecord[], topic?: string): Promise<void> {
  await fx.produce(records, topic);
  await fx.settled(records);
}
const ada = () => crm.record('contact', 'ada@time.io');
const at = (minute: number) => T0 + minute * 60_000;

describe('crm-sink: event-time order per field', () => {
  it('keeps the newest set against late and replayed events; the other action kinds keep their own rules', async () => {
    const pro = change('pro', 10);
    await sync([pro]);
    expect(ada()).toEqual({ plan: 'pro', first_plan: 'pro', plan_changes: 1, last_change_at: at(10), first_change_at: at(10), plans: 'pro' });

    // Late: an event from minute 5 arrives after minute 10's. Its set is older: ignored.
    const free = change('free', 5);
    await sync([free]);
    expect(ada()).toEqual({
      plan: 'pro',
      // setOnce keeps the first value that arrived, whatever its event time.
      first_plan: 'pro',
      // increment counts every event once, in any order.
      plan_changes: 2,
      // max and min compare the values themselves.
      last_change_at: at(10),
      first_change_at: at(5),
      // append adds in arrival order.
      plans: 'pro;free',
    });

    // Replayed from dead letters: an older event never applied, and a repeat of `free`.
    const trial = change('trial', 1);
    await sync([trial, free], fx.kafka.topic('crmReplay'));
    expect(ada()).toMatchObject({ plan: 'pro', plan_changes: 3, first_change_at: at(1), plans: 'pro;free;trial' });

    // A replay of the event that set the value writes the same value again.
    await sync([pro], fx.kafka.topic('crmReplay'));
    expect(ada()).toMatchObject({ plan: 'pro', plan_changes: 3 });

    // Newer events win, also when they are ordered the other way in one batch (one flush).
    const team = change('team', 30);
    const growth = change('growth', 20);
    await sync([team, growth]);
    expect(ada()).toMatchObject({ plan: 'team', plan_changes: 5, last_change_at: at(30) });

    // The same time: the greater eventId wins, whichever arrives first.
    const [a, b] = [change('same-a', 40), change('same-b', 40)];
    const [low, high] = Buffer.compare(Buffer.from(a.eventId), Buffer.from(b.eventId)) < 0 ? [a, b] : [b, a];
    await sync([high]);
    await sync([low]);
    expect(ada()?.plan).toBe(high.properties.plan);
  });
});

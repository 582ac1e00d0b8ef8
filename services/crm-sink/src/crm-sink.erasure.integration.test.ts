/**
 * Real servers: Kafka and Redis; the CRM is the in-memory double (adapters/memory-crm.fixture.ts).
 * Issue 28, item 4: events of an erased person, still in events.unique (Kafka keeps 7 days) or
 * replayed from the CRM dead letters (crm.replay), are not synced again; another person's are.
 */
import type { CrmCredential } from '@ingest/domain';
import { createSuppressionList, encodeSuppression, identifierHash, type SuppressionList, suppressionKey } from '@ingest/domain';
import { committedOffsets, topicOffsets } from '@ingest/platform';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryCrm, createStaticMappings } from './adapters/memory-crm.fixture.js';
import { createSinkFixture, everyKindMapping, type SinkFixture } from './crm-sink.fixture.js';

const crm = createMemoryCrm({ maxBatchSize: 100 });
let fx: SinkFixture;
let erasures: SuppressionList;
let groupId: string;

beforeAll(async () => {
  fx = await createSinkFixture({
    mappings: createStaticMappings({
      acc_er: { mapping: everyKindMapping('acc_er-hubspot'), credential: { type: 'hubspot', accessToken: 'acc_er' } satisfies CrmCredential },
    }),
    createAdapter: () => crm.adapter,
    extraTopics: ['erasures'],
  });
  erasures = createSuppressionList({ kafka: fx.kafka.kafka, topic: fx.kafka.topic('erasures'), logger: testLogger() });
  await erasures.start();
  groupId = `crm-sink-${uniqueSuffix()}`;
  await fx.startSink(groupId, { erasures });
});

afterAll(async () => {
  await fx?.cleanup();
  await erasures?.stop();
});

/** Every message of both topics handled (the sink commits dropped ones at once). */
async function handledAll(): Promise<void> {
  for (const topic of [fx.kafka.topic('eventsUnique'), fx.kafka.topic('crmReplay')]) {
    const ends = await topicOffsets(fx.kafka.kafka, topic);
    await waitFor(
      async () => {
        const committed = await committedOffsets(fx.kafka.kafka, groupId, topic);
        const behind = ends.filter((r) => r.high > r.low && BigInt(committed.get(r.partition) ?? '-1') < r.high);
        if (behind.length > 0)
          throw new Error(`${topic} behind on ${JSON.stringify(behind.map((r) => [r.partition, String(r.high), committed.get(r.partition)]))}`);
        return true;
      },
      { description: `the sink's commits past the end of ${topic}`, timeoutMs: 30_000 },
    );
  }
}

describe('crm-sink and erasure', () => {
  it('does not sync an erased person from events.unique nor from a CRM replay; others are synced', async () => {
    const record = {
      v: 1 as const,
      id: 'er1',
      accountId: 'acc_er',
      type: 'email',
      identifierHash: identifierHash('acc_er', 'email', 'gone@er.example'),
      erasedAt: '',
    };
    await fx.producer.send(fx.kafka.topic('erasures'), [{ key: suppressionKey(record), value: encodeSuppression(record) }]);
    const gone = fx.event('acc_er', 'Signed Up', 'gone@er.example', { plan: 'pro', source: 'ads' }, 1);
    const replayed = fx.event('acc_er', 'Signed Up', 'gone@er.example', { plan: 'team', source: 'ads' }, 2);
    const kept = fx.event('acc_er', 'Signed Up', 'kept@er.example', { plan: 'free', source: 'ads' }, 3);
    await fx.produce([gone, kept]);
    await fx.produce([replayed], fx.kafka.topic('crmReplay'));
    await fx.settled([kept]);
    await handledAll();
    expect(crm.record('contact', 'kept@er.example')).toMatchObject({ plan: 'free' });
    expect(crm.record('contact', 'gone@er.example')).toBeUndefined();
    expect([...crm.records.keys()].filter((k) => k.includes('gone@'))).toEqual([]);
  }, 60_000);
});

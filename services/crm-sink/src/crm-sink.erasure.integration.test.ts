/**
 * Real servers: Kafka and Redis; the CRM is the in-memory double (adapters/memory-crm.fixture.ts).
 * Issue 28, item 4: events of an erased person, still in events.unique (Kafka keeps 7 days) or
 * replayed from the CRM dead letters (crm.replay), or parked while the account was held, are not
 * synced again; another person's are.
 */
import type { Account, CrmCredential } from '@ingest/domain';
import { createSuppressionList, encodeSuppression, identifierHash, type SuppressionList, suppressionKey } from '@ingest/domain';
import { committedOffsets, topicOffsets } from '@ingest/platform';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryCrm, createStaticMappings } from './adapters/memory-crm.fixture.js';
import { createSinkFixture, everyKindMapping, type SinkFixture, TEST_PARK } from './crm-sink.fixture.js';

const crm = createMemoryCrm({ maxBatchSize: 100 });
const parkCrm = createMemoryCrm({ maxBatchSize: 100 });
let fx: SinkFixture;
let erasures: SuppressionList;
let groupId: string;
const erase = async (accountId: string, email: string) => {
  const record = { v: 1 as const, id: `er-${email}`, accountId, type: 'email', identifierHash: identifierHash(accountId, 'email', email), erasedAt: '' };
  await fx.producer.send(fx.kafka.topic('erasures'), [{ key: suppressionKey(record), value: encodeSuppression(record) }]);
};

// acc_park is held (suspended) until its test resumes it; acc_er is never held.
let parkSuspended = true;
const parkAccount: Account = { id: 'acc_park', name: 'p', plan: 'pro', createdAt: '', updatedAt: '' };

beforeAll(async () => {
  fx = await createSinkFixture({
    mappings: createStaticMappings(
      Object.fromEntries(
        ['acc_er', 'acc_park'].map((a) => [
          a,
          { mapping: everyKindMapping(`${a}-hubspot`), credential: { type: 'hubspot', accessToken: a } satisfies CrmCredential },
        ]),
      ),
    ),
    createAdapter: (credential) => (credential.type === 'hubspot' && credential.accessToken === 'acc_park' ? parkCrm : crm).adapter,
    extraTopics: ['erasures'],
  });
  erasures = createSuppressionList({ kafka: fx.kafka.kafka, topic: fx.kafka.topic('erasures'), logger: testLogger() });
  await erasures.start();
  groupId = `crm-sink-${uniqueSuffix()}`;
  await fx.startSink(groupId, {
    erasures,
    accounts: {
      accountById: (id) =>
        id !== 'acc_park' ? undefined : parkSuspended ? { ...parkAccount, suspension: { reason: 'test', suspendedAt: new Date().toISOString() } } : parkAccount,
      listAccounts: () => [parkAccount],
    },
    park: { ...TEST_PARK, pollMs: 100 },
  });
});

afterAll(async () => {
  await fx?.cleanup();
  await erasures?.stop();
});

/** Every message of both topics handled (the sink commits dropped ones at once). */
async function handledAll(groupId: string): Promise<void> {
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
    await handledAll(groupId);
    expect(crm.record('contact', 'kept@er.example')).toMatchObject({ plan: 'free' });
    expect(crm.record('contact', 'gone@er.example')).toBeUndefined();
    expect([...crm.records.keys()].filter((k) => k.includes('gone@'))).toEqual([]);
  }, 60_000);

  it('drops the parked events of a person erased while the account was held, when the account resumes', async () => {
    const gone = fx.event('acc_park', 'Signed Up', 'gone@park.example', { plan: 'pro', source: 'ads' }, 1);
    const kept = fx.event('acc_park', 'Signed Up', 'kept@park.example', { plan: 'free', source: 'ads' }, 2);
    await fx.produce([gone, kept]);
    const parkedKeys = async () => {
      const keys = await fx.redis.keys(`${fx.redisKeyPrefix}crm:park:*list*`);
      const lengths = await Promise.all(keys.map((k) => fx.redis.llen(k)));
      return lengths.reduce((a, b) => a + b, 0);
    };
    await waitFor(async () => (await parkedKeys()) >= 2 || (undefined as unknown as false), { description: 'both events parked', timeoutMs: 30_000 }).catch(
      async (err: unknown) => {
        throw new Error(`${(err as Error).message}; parked: ${await parkedKeys()}`);
      },
    );
    // The erasure lands while they are parked; then the account resumes.
    await erase('acc_park', 'gone@park.example');
    await waitFor(() => erasures.suppressed({ accountId: 'acc_park', email: 'gone@park.example' }), {
      description: 'the suppression followed',
      timeoutMs: 10_000,
    });
    parkSuspended = false;
    // A parked event's sync state is not `pending`: wait for the CRM itself.
    await waitFor(() => parkCrm.record('contact', 'kept@park.example'), { description: 'the kept contact synced after the resume', timeoutMs: 30_000 });
    expect(parkCrm.record('contact', 'kept@park.example')).toMatchObject({ plan: 'free' });
    await waitFor(async () => (await parkedKeys()) === 0 || (undefined as unknown as false), { description: 'the park drained', timeoutMs: 30_000 });
    expect(parkCrm.record('contact', 'gone@park.example')).toBeUndefined();
  }, 90_000);
});

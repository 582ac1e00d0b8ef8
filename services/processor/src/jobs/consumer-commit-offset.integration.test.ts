/**
 * Real servers: Kafka. The batch consumer's `commitOffset` option (packages/platform/src/kafka/
 * consumer.ts), which the job runner relies on: a handler may commit less than its batch
 * (a string: exactly that offset; null: nothing), the session still does not fetch the same
 * messages again, and a restarted member resumes from what was committed.
 * It lives here because the job runner is its first user; it tests shared code only.
 */
import { type BatchResult, committedOffsets, createBatchConsumer, createProducer, type Producer } from '@ingest/platform';
import { createTestKafka, type TestKafka, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let kafka: TestKafka;
let producer: Producer;

beforeAll(async () => {
  kafka = await createTestKafka(['jobChunks']);
  producer = createProducer(kafka.kafka);
  await producer.connect();
});

afterAll(async () => {
  await producer?.disconnect();
  await kafka?.cleanup();
});

describe('batch consumer commitOffset', () => {
  it('commits the offset the handler returns, nothing for null, and after the batch by default', async () => {
    const topic = kafka.topic('jobChunks');
    const groupId = `commit-${uniqueSuffix()}`;
    const key = 'one-partition';
    const produce = (...values: string[]) =>
      producer.send(
        topic,
        values.map((value) => ({ key, value })),
      );
    const committed = async (partition: number) => (await committedOffsets(kafka.kafka, groupId, topic)).get(partition);
    let partition = -1;

    // First member: holds its commit at offset 1 whatever it reads.
    const seenA: string[] = [];
    const a = createBatchConsumer(kafka.kafka, {
      name: 'commit-a',
      groupId,
      topics: [topic],
      logger: testLogger(),
      handleBatch: async (messages): Promise<BatchResult> => {
        partition = messages[0]?.partition ?? -1;
        seenA.push(...messages.map((m) => m.offset));
        return { commitOffset: '1' };
      },
    });
    await produce('m0', 'm1', 'm2');
    await a.start();
    try {
      await waitFor(async () => (await committed(partition)) === '1', { description: 'offset 1 committed' });
      await produce('m3');
      await waitFor(() => seenA.includes('3'), { description: 'm3 read' });
      // Resolved past the batch: the session never fetched m1 and m2 again.
      expect(seenA).toEqual(['0', '1', '2', '3']);
    } finally {
      await a.stop();
    }
    expect(await committed(partition)).toBe('1');

    // Second member of the group: resumes from the commit, commits nothing for what it holds,
    // then the default (after the batch) once m4 arrives.
    const seenB: string[] = [];
    let committedWhenM4Arrived: string | undefined;
    const b = createBatchConsumer(kafka.kafka, {
      name: 'commit-b',
      groupId,
      topics: [topic],
      logger: testLogger(),
      handleBatch: async (messages): Promise<BatchResult | undefined> => {
        seenB.push(...messages.map((m) => m.offset));
        if (!messages.some((m) => m.offset === '4')) return { commitOffset: null };
        committedWhenM4Arrived = await committed(partition);
        return undefined;
      },
    });
    await b.start();
    try {
      await waitFor(() => seenB.includes('3'), { description: 'm1..m3 read again after the restart' });
      await produce('m4');
      await waitFor(async () => (await committed(partition)) === '5', { description: 'offset 5 committed' });
      expect(seenB).toEqual(['1', '2', '3', '4']);
      expect(committedWhenM4Arrived).toBe('1');
    } finally {
      await b.stop();
    }
  });
});

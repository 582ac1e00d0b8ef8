/**
 * The batch consumer's own behaviour around its driver sessions, with a scripted fake driver: a
 * crash, a failed batch, a stalled session or a failed restart all end in a fresh session with no
 * caller's help; restart() never rejects; alive() turns false only after being down too long.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../logger.js';
import { waitFor } from '@ingest/testkit';
import { createBatchConsumer, type BatchConsumer } from './consumer.js';
import type { ConsumedMessage, DriverConsumer, DriverConsumerOptions, KafkaClient, TopicPartitionOffset } from './driver.js';

interface FakeSession {
  options: DriverConsumerOptions;
  commits: TopicPartitionOffset[];
  stopped: boolean;
  deliver(messages: ConsumedMessage[]): Promise<void>;
}

function fakeKafka(script: { failStarts?: number } = {}) {
  const sessions: FakeSession[] = [];
  let failStarts = script.failStarts ?? 0;
  const kafka: KafkaClient = {
    driver: 'kafkajs',
    clientId: 'fake',
    consumerDefaults: { sessionTimeoutMs: 6_000, deadAfterMs: 60_000 },
    producer: () => {
      throw new Error('not used');
    },
    admin: () => {
      throw new Error('not used');
    },
    consumer(options): DriverConsumer {
      const session: FakeSession = {
        options,
        commits: [],
        stopped: false,
        deliver: (messages) => options.handleBatch({ topic: 't', partition: 0, messages, heartbeat: async () => {}, isCurrent: () => !session.stopped }),
      };
      sessions.push(session);
      return {
        async start() {
          if (failStarts > 0) {
            failStarts--;
            throw new Error('broker unreachable');
          }
          options.onJoin({ t: [0] });
        },
        async commit(offsets) {
          session.commits.push(...offsets);
        },
        async stop() {
          session.stopped = true;
        },
      };
    },
  };
  return { kafka, sessions, live: () => sessions.filter((s) => !s.stopped), setFailStarts: (n: number) => (failStarts = n) };
}

const message = (offset: number): ConsumedMessage => ({
  topic: 't',
  partition: 0,
  offset: String(offset),
  key: null,
  value: Buffer.from('v'),
  headers: {},
  timestamp: 0,
});
const logger = createLogger({ service: 'test', level: 'silent' });
const fast = { initialBackoffMs: 5, maxBackoffMs: 20, leaveTimeoutMs: 100 };

let consumer: BatchConsumer | undefined;
afterEach(async () => {
  await consumer?.stop();
  consumer = undefined;
});

describe('batch consumer sessions', () => {
  it('commits after a batch, and starts a new session by itself after a crash', async () => {
    const fake = fakeKafka();
    let joins = 0;
    consumer = createBatchConsumer(fake.kafka, {
      name: 'c',
      groupId: 'g',
      topics: ['t'],
      logger,
      handleBatch: async () => {},
      onGroupJoin: () => joins++,
      recovery: fast,
    });
    await consumer.start();
    await fake.sessions[0]?.deliver([message(0), message(1)]);
    expect(fake.sessions[0]?.commits).toEqual([{ topic: 't', partition: 0, offset: '2' }]);

    fake.sessions[0]?.options.onCrash(new Error('The coordinator is not aware of this member'));
    expect(consumer.healthy()).toBe(false);
    await waitFor(() => consumer?.healthy() && fake.sessions.length === 2, { description: 'a second session running', timeoutMs: 2_000 });
    expect(fake.sessions[0]?.stopped).toBe(true);
    expect(joins).toBe(2);
    expect(consumer.alive()).toBe(true);
  });

  it('does not throw a failed batch into the driver: nothing is committed and a new session reads it again', async () => {
    const fake = fakeKafka();
    let fail = true;
    consumer = createBatchConsumer(fake.kafka, {
      name: 'c',
      groupId: 'g',
      topics: ['t'],
      logger,
      recovery: fast,
      handleBatch: async () => {
        if (fail) throw new Error('clickhouse down');
      },
    });
    await consumer.start();
    await expect(fake.sessions[0]?.deliver([message(0)])).resolves.toBeUndefined();
    expect(fake.sessions[0]?.commits).toEqual([]);
    await waitFor(() => fake.live().length === 1 && fake.sessions.length === 2 && consumer?.healthy(), { description: 'a new session', timeoutMs: 2_000 });
    fail = false;
    await fake.sessions[1]?.deliver([message(0)]);
    expect(fake.sessions[1]?.commits).toEqual([{ topic: 't', partition: 0, offset: '1' }]);
  });

  it('restart() never rejects, keeps trying while starts fail, and says dead after deadAfterMs', async () => {
    const fake = fakeKafka();
    consumer = createBatchConsumer(fake.kafka, {
      name: 'c',
      groupId: 'g',
      topics: ['t'],
      logger,
      handleBatch: async () => {},
      recovery: { ...fast, deadAfterMs: 150 },
    });
    await consumer.start();
    fake.setFailStarts(1_000);
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      // What storage does after a failed insert: fire and forget.
      void consumer.restart('clickhouse insert failed');
      await waitFor(() => fake.sessions.length >= 4, { description: 'several failed starts', timeoutMs: 2_000 });
      expect(consumer.healthy()).toBe(false);
      await waitFor(() => consumer?.alive() === false, { description: 'dead after 150 ms down', timeoutMs: 2_000 });
      fake.setFailStarts(0);
      await waitFor(() => consumer?.healthy(), { description: 'running again once starts succeed', timeoutMs: 2_000 });
      expect(consumer.alive()).toBe(true);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    expect(unhandled).toEqual([]);
  });

  it('replaces a session that shows no sign of life', async () => {
    const fake = fakeKafka();
    consumer = createBatchConsumer(fake.kafka, {
      name: 'c',
      groupId: 'g',
      topics: ['t'],
      logger,
      handleBatch: async () => {},
      recovery: { ...fast, stallTimeoutMs: 300 },
    });
    await consumer.start();
    // Activity keeps it: three times the stall timeout with a fetch every 50 ms.
    const until = Date.now() + 900;
    while (Date.now() < until) {
      fake.sessions[0]?.options.onActivity();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(fake.sessions).toHaveLength(1);
    // Silence ends it.
    await waitFor(() => fake.sessions.length === 2 && consumer?.healthy(), { description: 'a replacement after the stall', timeoutMs: 3_000 });
    expect(fake.sessions[0]?.stopped).toBe(true);
  });

  it('stop() during a recovery ends it without starting another session', async () => {
    const fake = fakeKafka();
    consumer = createBatchConsumer(fake.kafka, {
      name: 'c',
      groupId: 'g',
      topics: ['t'],
      logger,
      handleBatch: async () => {},
      recovery: { ...fast, initialBackoffMs: 200 },
    });
    await consumer.start();
    fake.sessions[0]?.options.onCrash(new Error('gone'));
    await consumer.stop();
    await new Promise((r) => setTimeout(r, 300));
    expect(fake.sessions).toHaveLength(1);
    expect(consumer.alive()).toBe(true); // stopped on purpose is not dead
    consumer = undefined;
  });
  it('refuses a commit for a partition it does not hold, or without a running session, instead of resolving as if it landed', async () => {
    const fake = fakeKafka();
    consumer = createBatchConsumer(fake.kafka, { name: 'c', groupId: 'g', topics: ['t'], logger, handleBatch: async () => {}, recovery: fast });
    await consumer.start();
    await consumer.commit('t', 0, '5');
    // A rebalance gave partition 0 away: the commit is not sent and the caller is told.
    fake.sessions[0]?.options.onJoin({ t: [1] });
    await expect(consumer.commit('t', 0, '9')).rejects.toMatchObject({ code: 'kafka_rebalance', retryable: true });
    // Of several, those still held are committed and the rest named in the rejection.
    await expect(
      consumer.commitMany([
        { topic: 't', partition: 0, offset: '10' },
        { topic: 't', partition: 1, offset: '3' },
      ]),
    ).rejects.toThrow(/no longer holds: t\/0$/);
    expect(fake.sessions[0]?.commits).toEqual([
      { topic: 't', partition: 0, offset: '5' },
      { topic: 't', partition: 1, offset: '3' },
    ]);
    const stopped = consumer;
    await stopped.stop();
    consumer = undefined;
    await expect(stopped.commit('t', 1, '4')).rejects.toMatchObject({ code: 'kafka_rebalance' });
  });
});

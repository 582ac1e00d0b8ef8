/**
 * The consumer frame with a scripted fake driver: each result a step can give is handled the one
 * way the frame promises (published, dead-lettered, dropped, retried, interrupted), in the order
 * publish -> dead letters -> end -> count -> backpressure -> commit; what the decoder refuses is
 * dead-lettered without reaching the step; a step that throws commits nothing and the batch is
 * read again.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { sampleValue, waitFor } from '@ingest/testkit';
import { AppError } from '../errors.js';
import { createLogger } from '../logger.js';
import { createMetricsRegistry } from '../metrics.js';
import type { BatchConsumer, BatchResult } from './consumer.js';
import { createStageConsumer, deadLetter, type Decoded, drop, interrupted, ok, passOn, retry, type StageBatch, type StageResult } from './consumer.frame.js';
import type { DeadLetter } from './dead-letter.js';
import type { ConsumedMessage, DriverConsumer, DriverConsumerOptions, KafkaClient, TopicPartitionOffset } from './driver.js';
import type { OutgoingMessage } from './producer.js';

interface FakeSession {
  commits: TopicPartitionOffset[];
  stopped: boolean;
  deliver(messages: ConsumedMessage[]): Promise<void>;
}

function fakeKafka() {
  const sessions: FakeSession[] = [];
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
    consumer(options: DriverConsumerOptions): DriverConsumer {
      const session: FakeSession = {
        commits: [],
        stopped: false,
        deliver: (messages) => options.handleBatch({ topic: 't', partition: 0, messages, heartbeat: async () => {}, isCurrent: () => !session.stopped }),
      };
      sessions.push(session);
      return {
        start: async () => options.onJoin({ t: [0] }),
        commit: async (offsets) => void session.commits.push(...offsets),
        stop: async () => void (session.stopped = true),
      };
    },
  };
  return { kafka, sessions, live: () => sessions.filter((s) => !s.stopped) };
}

/** A message whose value is what the step should answer ("ok", "dup", "bad", "pass", ...), or `!` for undecodable bytes. */
const message = (offset: number, value: string): ConsumedMessage => ({
  topic: 't',
  partition: 0,
  offset: String(offset),
  key: null,
  value: Buffer.from(value),
  headers: {},
  timestamp: 1_000 + offset,
});

const decode = (m: ConsumedMessage): Decoded<string> => {
  const text = m.value?.toString() ?? '';
  return text.startsWith('!') ? { ok: false, code: 'invalid_json', reason: `value of ${text.length} bytes is not valid JSON` } : { ok: true, record: text };
};

const answers: Record<string, () => StageResult> = {
  ok: () => ok(),
  pass: () => passOn({ key: 'k', value: 'passed' }),
  dup: () => drop('duplicate'),
  bad: () => deadLetter('schema_mismatch', 'event record /eventId must be string'),
  retry: () => retry('the CRM answered 503', new Error('503')),
  stop: () => interrupted(),
  throw: () => {
    throw new AppError('kafka_unavailable', 'broker down', { retryable: true });
  },
};

const logger = createLogger({ service: 'test', level: 'silent' });
let consumer: BatchConsumer | undefined;
afterEach(async () => {
  await consumer?.stop();
  consumer = undefined;
});

/** A stage whose step answers each message's value; everything it is asked to do is logged, in order. */
async function start(overrides: Partial<StageBatch<string>> & { open?: 'skip' } = {}) {
  const fake = fakeKafka();
  const metrics = createMetricsRegistry('test');
  const effects: string[] = [];
  const published: OutgoingMessage[][] = [];
  const letters: DeadLetter[] = [];
  const stepped: string[] = [];
  const deadLetters = {
    async publish(batch: DeadLetter[]) {
      effects.push(`dead letters ${batch.length}`);
      letters.push(...batch);
    },
  };
  consumer = createStageConsumer<string>(
    { kafka: fake.kafka, groupId: 'g', logger, metrics, deadLetters },
    {
      name: 'frame-test',
      stage: 'dedupe',
      outcomes: ['ok', 'duplicate', 'dead_letter'],
      topics: ['t'],
      recovery: { initialBackoffMs: 5, maxBackoffMs: 20, leaveTimeoutMs: 100 },
      decode,
      open() {
        if (overrides.open === 'skip') return null;
        return {
          step(record) {
            stepped.push(record);
            return (answers[record] ?? ok)();
          },
          async publish(passed) {
            effects.push(`publish ${passed.length}`);
            published.push(passed);
          },
          end: overrides.end
            ? (done) => {
                effects.push('end');
                return overrides.end?.(done);
              }
            : () => void effects.push('end'),
          backpressure: async () => void effects.push('backpressure'),
        };
      },
    },
  );
  await consumer.start();
  const counted = async (outcome: string) => sampleValue(await metrics.metrics(), 'ingest_consumer_messages_total', { consumer: 'dedupe', outcome });
  const failures = async () => sampleValue(await metrics.metrics(), 'ingest_consumer_batch_failures_total', { consumer: 'dedupe' });
  return { fake, effects, published, letters, stepped, counted, failures };
}

describe('consumer frame', () => {
  it('handles each result kind in one place: passed on are published, then dead letters, then end; counted; the batch committed', async () => {
    const t = await start();
    await t.fake.sessions[0]?.deliver([message(10, 'ok'), message(11, 'pass'), message(12, 'dup'), message(13, 'bad'), message(14, 'pass')]);

    expect(t.effects).toEqual(['publish 2', 'dead letters 1', 'end', 'backpressure']);
    expect(t.published[0]).toEqual([
      { key: 'k', value: 'passed' },
      { key: 'k', value: 'passed' },
    ]);
    expect(t.letters.map((l) => ({ offset: l.message.offset, code: l.code, reason: l.reason }))).toEqual([
      { offset: '13', code: 'schema_mismatch', reason: 'event record /eventId must be string' },
    ]);
    expect(t.fake.sessions[0]?.commits).toEqual([{ topic: 't', partition: 0, offset: '15' }]);
    expect(await t.counted('ok')).toBe(3);
    expect(await t.counted('duplicate')).toBe(1);
    expect(await t.counted('dead_letter')).toBe(1);
  });

  it('dead-letters what the decoder refuses with its code and reason, without calling the step', async () => {
    const t = await start();
    await t.fake.sessions[0]?.deliver([message(0, '!{'), message(1, 'ok')]);
    expect(t.stepped).toEqual(['ok']);
    expect(t.letters.map((l) => [l.message.offset, l.code, l.reason])).toEqual([['0', 'invalid_json', 'value of 2 bytes is not valid JSON']]);
    expect(t.fake.sessions[0]?.commits).toEqual([{ topic: 't', partition: 0, offset: '2' }]);
    expect(await t.counted('dead_letter')).toBe(1);
  });

  it('a step that throws: nothing published, dead-lettered or committed; the failure counted; a new session reads the batch again', async () => {
    const t = await start();
    await t.fake.sessions[0]?.deliver([message(0, 'bad'), message(1, 'throw'), message(2, 'pass')]);
    expect(t.effects).toEqual([]);
    expect(t.fake.sessions[0]?.commits).toEqual([]);
    expect(await t.failures()).toBe(1);
    expect(await t.counted('dead_letter')).toBe(0);
    await waitFor(() => t.fake.live().length === 1 && t.fake.sessions.length === 2, { description: 'a new session', timeoutMs: 2_000 });
    await t.fake.sessions[1]?.deliver([message(0, 'bad'), message(1, 'ok'), message(2, 'pass')]);
    expect(t.fake.sessions[1]?.commits).toEqual([{ topic: 't', partition: 0, offset: '3' }]);
  });

  it('retry: the batch fails like a throw (nothing of it done or committed), and is read again', async () => {
    const t = await start();
    await t.fake.sessions[0]?.deliver([message(0, 'ok'), message(1, 'retry'), message(2, 'pass')]);
    expect(t.effects).toEqual([]);
    expect(t.fake.sessions[0]?.commits).toEqual([]);
    expect(await t.failures()).toBe(1);
    await waitFor(() => t.fake.sessions.length === 2 && t.fake.live().length === 1, { description: 'a new session', timeoutMs: 2_000 });
    expect(t.stepped).toEqual(['ok', 'retry']);
  });

  it('interrupted: the batch ends there, with no publish, no dead letters, no commit and no failure', async () => {
    const t = await start();
    await t.fake.sessions[0]?.deliver([message(0, 'bad'), message(1, 'stop'), message(2, 'pass')]);
    expect(t.stepped).toEqual(['bad', 'stop']);
    expect(t.effects).toEqual([]);
    expect(t.fake.sessions[0]?.commits).toEqual([]);
    expect(await t.failures()).toBe(0);
    expect(t.fake.sessions).toHaveLength(1);
  });

  it("commits what end says: an offset of its own, or nothing (it commits later itself); it sees the batch's dead letters", async () => {
    let answer: BatchResult = { commitOffset: '3' };
    const seen: string[][] = [];
    const t = await start({
      end: ({ deadLettered }) => {
        seen.push(deadLettered.map((l) => l.message.offset));
        return answer;
      },
    });
    await t.fake.sessions[0]?.deliver([message(5, 'ok'), message(6, '!')]);
    answer = { commitOffset: null };
    await t.fake.sessions[0]?.deliver([message(7, 'ok')]);
    expect(t.fake.sessions[0]?.commits).toEqual([{ topic: 't', partition: 0, offset: '3' }]);
    expect(seen).toEqual([['6'], []]);
  });

  it('a batch the stage does not open is left alone and uncommitted', async () => {
    const t = await start({ open: 'skip' });
    await t.fake.sessions[0]?.deliver([message(0, 'ok')]);
    expect(t.stepped).toEqual([]);
    expect(t.effects).toEqual([]);
    expect(t.fake.sessions[0]?.commits).toEqual([]);
  });
});

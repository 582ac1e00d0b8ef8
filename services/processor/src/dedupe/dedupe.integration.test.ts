/**
 * Real server: Kafka. The dedupe step passes each (account, eventId) to events.unique once:
 * repeats in one batch, in later batches, and after a restart (state restored from the
 * changelog) are dropped; poison messages are dead-lettered.
 */
import type { EventRecord } from '@ingest/schemas';
import { AppError, type BatchConsumer, committedOffsets, createDeadLetterSink, createMetricsRegistry, createProducer, type Producer } from '@ingest/platform';
import { createTestKafka, sampleValue, type TestKafka, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDedupeConsumer } from './dedupe.consumer.js';

let kafka: TestKafka;
let producer: Producer;

beforeAll(async () => {
  kafka = await createTestKafka(['eventsRaw', 'eventsUnique', 'dedupeChangelog', 'deadLetters']);
  producer = createProducer(kafka.kafka);
  await producer.connect();
});

afterAll(async () => {
  await producer?.disconnect();
  await kafka?.cleanup();
});

const DAY = 24 * 3600 * 1000;

function record(accountId: string, eventId: string, receivedAtMs = Date.now()): EventRecord {
  return {
    v: 1,
    accountId,
    eventId,
    eventName: 'Used',
    email: `${eventId}@example.com`,
    domain: null,
    timestampMs: receivedAtMs,
    receivedAtMs,
    properties: {},
    source: 'api',
    jobId: null,
  };
}

async function sendRaw(records: EventRecord[]): Promise<void> {
  await producer.send(
    kafka.topic('eventsRaw'),
    records.map((r) => ({ key: `${r.accountId}:${r.eventId}`, value: JSON.stringify(r) })),
  );
}

function startDedupe(
  groupId: string,
  windowMs = 7 * DAY,
  output: Producer = producer,
): { consumer: BatchConsumer; metric: (name: string) => Promise<number>; metricsText: () => Promise<string> } {
  const metrics = createMetricsRegistry('dedupe-test');
  const consumer = createDedupeConsumer({
    kafka: kafka.kafka,
    producer: output,
    rawTopic: kafka.topic('eventsRaw'),
    uniqueTopic: kafka.topic('eventsUnique'),
    changelogTopic: kafka.topic('dedupeChangelog'),
    groupId,
    deadLetters: createDeadLetterSink(producer, kafka.topic('deadLetters'), 'dedupe-test', { metrics, label: 'dedupe' }),
    logger: testLogger(),
    metrics,
    windowMs,
    partitionsConsumedConcurrently: 3,
  });
  const metric = async (name: string) => (await metrics.getSingleMetric(name)?.get())?.values.reduce((s, v) => s + v.value, 0) ?? 0;
  return { consumer, metric, metricsText: () => metrics.metrics() };
}

/** Collects events.unique for one account (a fresh group reads the topic from the start). */
function collectUnique(accountId: string) {
  const seen: EventRecord[] = [];
  const keys: string[] = [];
  const reader = startReader(kafka.topic('eventsUnique'), (value, key) => {
    const r = JSON.parse(value) as EventRecord;
    if (r.accountId === accountId) {
      seen.push(r);
      keys.push(key);
    }
  });
  return { seen, keys, reader };
}

function startReader(topic: string, onMessage: (value: string, key: string) => void): Promise<BatchConsumer> {
  return import('@ingest/platform').then(async ({ createBatchConsumer }) => {
    const c = createBatchConsumer(kafka.kafka, {
      name: 'reader',
      groupId: `reader-${uniqueSuffix()}`,
      topics: [topic],
      logger: testLogger(),
      handleBatch: async (messages) => {
        for (const m of messages) onMessage(m.value?.toString() ?? '', m.key?.toString() ?? '');
      },
    });
    await c.start();
    return c;
  });
}

describe('dedupe consumer', () => {
  it('passes each event once across batches and restarts, and keys events.unique by identity', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const groupId = `dedupe-${uniqueSuffix()}`;
    const ids = Array.from({ length: 150 }, (_, i) => `e${i}`);
    // 150 events, 30 of them twice in the same send, and 20 again in a later send.
    await sendRaw([...ids.map((id) => record(accountId, id)), ...ids.slice(0, 30).map((id) => record(accountId, id))]);

    const out = collectUnique(accountId);
    const reader = await out.reader;
    const first = startDedupe(groupId);
    await first.consumer.start();
    try {
      await waitFor(() => out.seen.length >= 150 || undefined, { description: '150 unique events' });
      await sendRaw(ids.slice(100, 120).map((id) => record(accountId, id)));
      await waitFor(async () => (await first.metric('ingest_dedupe_hits_total')) === 50 || undefined, { description: '50 dedupe hits' });
      // The stage's messages by outcome, counted with the dedupe counters once the batch is durable.
      const text = await first.metricsText();
      expect(sampleValue(text, 'ingest_consumer_messages_total', { consumer: 'dedupe', outcome: 'duplicate' })).toBe(50);
      expect(sampleValue(text, 'ingest_consumer_messages_total', { consumer: 'dedupe', outcome: 'ok' })).toBe(150);
      expect(sampleValue(text, 'ingest_consumer_batch_failures_total', { consumer: 'dedupe' })).toBe(0);
    } finally {
      await first.consumer.stop();
    }

    // After a restart (new process, same group) the marks come back from the changelog.
    await sendRaw([...ids.slice(0, 40).map((id) => record(accountId, id)), record(accountId, 'late-new')]);
    const second = startDedupe(groupId);
    await second.consumer.start();
    try {
      await waitFor(() => out.seen.some((r) => r.eventId === 'late-new') || undefined, { description: 'the new event after restart' });
      await waitFor(async () => (await second.metric('ingest_dedupe_hits_total')) === 40 || undefined, { description: '40 hits after restart' });
      expect(await second.metric('ingest_dedupe_restored_marks_total')).toBeGreaterThanOrEqual(150);
    } finally {
      await second.consumer.stop();
      await reader.stop();
    }

    const counts = new Map<string, number>();
    for (const r of out.seen) counts.set(r.eventId, (counts.get(r.eventId) ?? 0) + 1);
    expect(counts.size).toBe(151);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(out.keys[0]).toBe(`${accountId}:${out.seen[0]?.email}`);
  });

  it("passes a newer writer's record (optional fields this release does not know) on, byte for byte, instead of dead-lettering it", async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const newer = { ...record(accountId, 'newer-writer'), userId: 'u-1', anonymousId: 'a-1', context: { library: { name: 'analytics.js' } } };
    await producer.send(kafka.topic('eventsRaw'), [{ key: `${accountId}:newer-writer`, value: JSON.stringify(newer) }]);
    const out = collectUnique(accountId);
    const reader = await out.reader;
    const dedupe = startDedupe(`dedupe-${uniqueSuffix()}`);
    await dedupe.consumer.start();
    try {
      await waitFor(() => out.seen.length >= 1 || undefined, { description: "the newer writer's record on events.unique" });
      expect(out.seen).toEqual([newer]);
      // Counted once the batch is done (its marks written after its events), so a moment after
      // events.unique shows it: CI read 0 here once.
      let counted: number | undefined;
      const passed = async () =>
        (counted = sampleValue(await dedupe.metricsText(), 'ingest_consumer_messages_total', { consumer: 'dedupe', outcome: 'ok' }) ?? 0);
      await waitFor(async () => (await passed()) >= 1 || undefined, { description: () => `the event counted as passed (ok: ${counted})` });
      expect(await passed()).toBe(1);
    } finally {
      await dedupe.consumer.stop();
      await reader.stop();
    }
  });

  it('forgets an event after the window: a repeat later than that passes again', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const out = collectUnique(accountId);
    const reader = await out.reader;
    const dedupe = startDedupe(`dedupe-${uniqueSuffix()}`, 60_000);
    await dedupe.consumer.start();
    try {
      const t0 = Date.now() - 10 * 60_000;
      await sendRaw([record(accountId, 'w1', t0), record(accountId, 'w1', t0 + 30_000), record(accountId, 'w1', t0 + 61_000)]);
      await waitFor(() => out.seen.length >= 2 || undefined, { description: 'the first copy and the one after the window' });
      expect(out.seen.map((r) => r.receivedAtMs)).toEqual([t0, t0 + 61_000]);
    } finally {
      await dedupe.consumer.stop();
      await reader.stop();
    }
  });

  it('dead-letters poison messages and keeps going', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const out = collectUnique(accountId);
    const reader = await out.reader;
    const dedupe = startDedupe(`dedupe-${uniqueSuffix()}`);
    await dedupe.consumer.start();
    try {
      await producer.send(kafka.topic('eventsRaw'), [
        { key: `${accountId}:x`, value: 'not json' },
        { key: `${accountId}:y`, value: JSON.stringify({ ...record(accountId, 'y'), v: 7 }) },
        { key: `${accountId}:ok`, value: JSON.stringify(record(accountId, 'ok')) },
      ]);
      await waitFor(() => out.seen.some((r) => r.eventId === 'ok') || undefined, { description: 'the good event' });
      await waitFor(async () => (await dedupe.metric('ingest_dead_letters_total')) >= 2 || undefined, { description: 'two dead letters' });
    } finally {
      await dedupe.consumer.stop();
      await reader.stop();
    }
  });

  /** Counts of each eventId seen on events.unique. */
  function copiesOf(seen: readonly EventRecord[]): Map<string, number> {
    const counts = new Map<string, number>();
    for (const r of seen) counts.set(r.eventId, (counts.get(r.eventId) ?? 0) + 1);
    return counts;
  }

  /** 100 events on partition 0 of events.raw, so they are one batch. */
  async function sendOneBatch(accountId: string, prefix: string): Promise<string[]> {
    const ids = Array.from({ length: 100 }, (_, i) => `${prefix}-${i}`);
    await producer.send(
      kafka.topic('eventsRaw'),
      ids.map((id) => ({ key: 'one', value: JSON.stringify(record(accountId, id)), partition: 0 })),
    );
    return ids;
  }

  // Regression (found by `npm run test:scale`): events and their marks shared one produce
  // request; on a cluster that is one request per leader, and a killed broker let the marks land
  // while the events did not. The retried batch then dropped every event as a repeat: lost.
  it('loses nothing when the changelog could take its part of a send and events.unique could not', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const groupId = `dedupe-${uniqueSuffix()}`;
    let failures = 0;
    const eventsLeaderDown: Producer = {
      ...producer,
      async sendBatch(batches) {
        if (failures === 0 && batches.some((b) => b.topic === kafka.topic('eventsUnique') && b.messages.length > 0)) {
          failures++;
          // The other leaders take their parts; events.unique's leader is gone.
          await producer.sendBatch(batches.filter((b) => b.topic !== kafka.topic('eventsUnique')));
          throw new AppError('kafka_outcome_unknown', 'part of the send was written (test: events.unique leader killed)', { retryable: true });
        }
        await producer.sendBatch(batches);
      },
    };
    const ids = await sendOneBatch(accountId, 'leader-down');
    const out = collectUnique(accountId);
    const reader = await out.reader;
    const dedupe = startDedupe(groupId, 7 * DAY, eventsLeaderDown);
    await dedupe.consumer.start();
    try {
      await waitFor(() => (copiesOf(out.seen).size >= ids.length ? true : undefined), {
        description: () => `all 100 events in events.unique after the failed send (seen ${copiesOf(out.seen).size} distinct, ${failures} failed sends)`,
        timeoutMs: 60_000,
      });
      expect(failures).toBe(1);
      expect([...copiesOf(out.seen).values()].every((n) => n === 1)).toBe(true);
    } finally {
      await dedupe.consumer.stop();
      await reader.stop();
    }
  });

  // A send that Kafka wrote but reported as failed (timeout while in flight) is retried: its
  // events pass again (copies, which storage and the CRM ledger absorb), never fewer.
  it('passes a batch again, losing nothing, when a send that landed was reported as failed', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const groupId = `dedupe-${uniqueSuffix()}`;
    let calls = 0;
    const landsButFails: Producer = {
      ...producer,
      async sendBatch(batches) {
        await producer.sendBatch(batches);
        if (calls++ === 0) throw new AppError('kafka_outcome_unknown', 'kafka did not acknowledge in time (test: written, ack lost)', { retryable: true });
      },
    };
    const ids = await sendOneBatch(accountId, 'lost-ack');
    const out = collectUnique(accountId);
    const reader = await out.reader;
    const dedupe = startDedupe(groupId, 7 * DAY, landsButFails);
    await dedupe.consumer.start();
    try {
      await waitFor(async () => (await committedOffsets(kafka.kafka, groupId, kafka.topic('eventsRaw'))).get(0) !== '-1' || undefined, {
        description: 'the batch committed after its retry',
        timeoutMs: 60_000,
      });
      await waitFor(() => (out.seen.length >= 2 * ids.length ? true : undefined), {
        description: () => `the events twice in events.unique (seen ${out.seen.length})`,
      });
      expect(calls).toBeGreaterThanOrEqual(2);
      const copies = copiesOf(out.seen);
      expect(copies.size).toBe(ids.length);
      expect([...copies.values()].every((n) => n === 2)).toBe(true);
    } finally {
      await dedupe.consumer.stop();
      await reader.stop();
    }
  });

  it('keeps the marks of a batch whose changelog write failed and writes them with the next batch', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const groupId = `dedupe-${uniqueSuffix()}`;
    let failedMarks = 0;
    const changelogDown: Producer = {
      ...producer,
      async sendBatch(batches) {
        if (failedMarks === 0 && batches.some((b) => b.topic === kafka.topic('dedupeChangelog'))) {
          failedMarks++;
          throw new AppError('kafka_unavailable', 'test: the changelog cannot be written', { retryable: true });
        }
        await producer.sendBatch(batches);
      },
    };
    const ids = await sendOneBatch(accountId, 'marks-later');
    const out = collectUnique(accountId);
    const reader = await out.reader;
    const first = startDedupe(groupId, 7 * DAY, changelogDown);
    await first.consumer.start();
    try {
      await waitFor(() => (out.seen.length >= ids.length ? true : undefined), { description: () => `the first batch passed (seen ${out.seen.length})` });
      expect(failedMarks).toBe(1);
      await waitFor(async () => (await first.metric('ingest_dedupe_unwritten_marks')) === ids.length || undefined, {
        description: 'the batch marks held as unwritten',
      });
      // The next batch of the partition carries the owed marks.
      await producer.send(kafka.topic('eventsRaw'), [{ key: 'one', value: JSON.stringify(record(accountId, 'next')), partition: 0 }]);
      await waitFor(async () => (await first.metric('ingest_dedupe_unwritten_marks')) === 0 || undefined, { description: 'the owed marks written' });
    } finally {
      await first.consumer.stop();
    }
    // A new process restores every mark: the first batch's repeats are dropped.
    await producer.send(
      kafka.topic('eventsRaw'),
      [...ids, 'after-restart'].map((id) => ({ key: 'one', value: JSON.stringify(record(accountId, id)), partition: 0 })),
    );
    const second = startDedupe(groupId);
    await second.consumer.start();
    try {
      await waitFor(() => out.seen.some((r) => r.eventId === 'after-restart') || undefined, { description: 'the new event after restart' });
      const copies = copiesOf(out.seen);
      expect(copies.size).toBe(ids.length + 2);
      expect([...copies.values()].every((n) => n === 1)).toBe(true);
    } finally {
      await second.consumer.stop();
      await reader.stop();
    }
  });
});

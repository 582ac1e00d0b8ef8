/**
 * Real servers: Kafka and ClickHouse; the storage consumer in this process. Poison values: a
 * record on events.unique whose time is out of range (past what JavaScript dates hold, or
 * outside ClickHouse's DateTime) made the writer throw on every attempt, so storage retried
 * the batch for ever and its partition stood still. The record schema bounds the times
 * (1970 to 2099): such a record is dead-lettered with the reason and the records around it
 * are stored.
 */
import { type EventRecord, LATEST_RECORD_TIME_MS } from '@ingest/schemas';
import { createBatchConsumer, createDeadLetterSink, createMetricsRegistry, createProducer, DEAD_LETTER_HEADERS, type Producer } from '@ingest/platform';
import { createTestClickHouse, createTestKafka, type TestClickHouse, type TestKafka, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClickHouseWriter } from './clickhouse.writer.js';
import { EVENT_COLUMNS } from '@ingest/domain';
import { createStorageConsumer } from './storage.consumer.js';

let kafka: TestKafka;
let clickhouse: TestClickHouse;
let producer: Producer;

beforeAll(async () => {
  [kafka, clickhouse] = await Promise.all([createTestKafka(['eventsUnique', 'deadLetters']), createTestClickHouse()]);
  producer = createProducer(kafka.kafka);
  await producer.connect();
});

afterAll(async () => {
  await producer?.disconnect();
  await Promise.allSettled([kafka?.cleanup(), clickhouse?.cleanup()]);
});

function record(accountId: string, eventId: string, timestampMs: number, receivedAtMs = Date.UTC(2026, 0, 15)): EventRecord {
  return {
    v: 1,
    accountId,
    eventId,
    eventName: 'Poison Test',
    email: 'a@b.io',
    domain: null,
    timestampMs,
    receivedAtMs,
    properties: {},
    source: 'api',
    jobId: null,
  };
}

describe('poison values on events.unique', () => {
  it('dead-letters records with out-of-range times and stores the ones around them', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const key = `${accountId}:same`; // one partition: the poison sits between good records
    const good = (n: number) => record(accountId, `good-${n}`, Date.UTC(2026, 0, 15, 10, 0, n));
    const poison = [
      record(accountId, 'beyond-js-dates', 1e20),
      record(accountId, 'year-3000', Date.UTC(3000, 0, 1)),
      record(accountId, 'before-1970', -1),
      record(accountId, 'just-past-the-range', LATEST_RECORD_TIME_MS + 1),
      record(accountId, 'received-beyond', Date.UTC(2026, 0, 1), 1e20),
    ];
    await producer.send(
      kafka.topic('eventsUnique'),
      [good(1), ...poison, good(2)].map((r) => ({ key, value: JSON.stringify(r) })),
    );

    const logger = testLogger();
    const metrics = createMetricsRegistry('poison-test');
    const storage = createStorageConsumer({
      kafka: kafka.kafka,
      topic: kafka.topic('eventsUnique'),
      groupId: `storage-${uniqueSuffix()}`,
      writer: createClickHouseWriter({ ch: clickhouse.ch, table: 'events', columns: EVENT_COLUMNS, logger, metrics }),
      deadLetters: createDeadLetterSink(producer, kafka.topic('deadLetters'), 'storage-test'),
      logger,
      metrics,
    });
    const letters: { eventId: string; headers: Record<string, string> }[] = [];
    const dlqReader = createBatchConsumer(kafka.kafka, {
      name: 'dlq-reader',
      groupId: `dlq-${uniqueSuffix()}`,
      topics: [kafka.topic('deadLetters')],
      logger,
      handleBatch: async (messages) => {
        for (const m of messages)
          letters.push({ eventId: (JSON.parse(m.value?.toString() ?? '{}') as { eventId?: string }).eventId ?? '', headers: m.headers });
      },
    });
    await Promise.all([storage.start(), dlqReader.start()]);
    try {
      const stored = await waitFor(
        async () => {
          const rows = await clickhouse.ch.query<{ event_id: string }>(`SELECT event_id FROM events WHERE account_id = '${accountId}' ORDER BY event_id`);
          return rows.length >= 2 ? rows.map((r) => r.event_id) : undefined;
        },
        { description: 'the good records stored past the poison ones' },
      );
      expect(stored).toEqual(['good-1', 'good-2']);
      const dead = await waitFor(() => (letters.length >= poison.length ? letters : undefined), { description: `${poison.length} dead letters` });
      expect(dead.map((l) => l.eventId).sort()).toEqual(poison.map((r) => r.eventId).sort());
      for (const letter of dead) {
        expect(letter.headers[DEAD_LETTER_HEADERS.code]).toBe('schema_mismatch');
        expect(letter.headers[DEAD_LETTER_HEADERS.reason]).toMatch(/\/(timestampMs|receivedAtMs) must be (<=|>=)/);
      }
    } finally {
      await Promise.all([storage.stop(), dlqReader.stop()]);
    }
  });
});

/**
 * Real servers: Kafka, ClickHouse (from the local stack or containers; see scripts/test).
 * Proves the plumbing end to end: the Kafka wrapper produces, a consumer group consumes, the
 * ClickHouse writer stores, a restarted consumer resumes from its committed offset, and a
 * poison message is dead-lettered without blocking its partition.
 */
import type { EventRecord } from '@ingest/schemas';
import {
  AppError,
  type BatchConsumer,
  committedOffsets,
  createBatchConsumer,
  createEndOffsetsReader,
  createDeadLetterSink,
  createMetricsRegistry,
  createProducer,
  DEAD_LETTER_HEADERS,
  type Producer,
} from '@ingest/platform';
import { createTestClickHouse, createTestKafka, sampleValue, type TestClickHouse, type TestKafka, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClickHouseWriter, createClickHouseWriter } from './clickhouse.writer.js';
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

function record(accountId: string, n: number): EventRecord {
  return {
    v: 1,
    accountId,
    eventId: `evt-${n}`,
    eventName: n % 2 === 0 ? 'Page Viewed' : 'Signed Up',
    email: `user${n}@example.com`,
    domain: null,
    timestampMs: Date.UTC(2026, 0, 15, 10, 0, 0, n % 1000),
    receivedAtMs: Date.UTC(2026, 0, 15, 10, 0, 1, 0),
    properties: { n, nested: { ok: true }, quote: "it's \\ fine" },
    source: 'api',
    jobId: null,
  };
}

async function produce(accountId: string, from: number, to: number): Promise<void> {
  const records = Array.from({ length: to - from }, (_, i) => record(accountId, from + i));
  await producer.send(
    kafka.topic('eventsUnique'),
    records.map((r) => ({ key: `${r.accountId}:${r.email}`, value: JSON.stringify(r) })),
  );
}

function startStorage(
  groupId: string,
  wrap: (writer: ClickHouseWriter) => ClickHouseWriter = (writer) => writer,
): {
  consumer: BatchConsumer;
  rowsInserted: () => Promise<number>;
  storedLatencyCount: () => Promise<number>;
  metricsText: () => Promise<string>;
} {
  const metrics = createMetricsRegistry('processor-test');
  const logger = testLogger();
  const writer = wrap(createClickHouseWriter({ ch: clickhouse.ch, table: 'events', columns: EVENT_COLUMNS, logger, metrics }));
  const consumer = createStorageConsumer({
    kafka: kafka.kafka,
    topic: kafka.topic('eventsUnique'),
    groupId,
    writer,
    deadLetters: createDeadLetterSink(producer, kafka.topic('deadLetters'), 'storage-test'),
    logger,
    metrics,
    partitionsConsumedConcurrently: 3,
  });
  const rowsInserted = async () => {
    const metric = await metrics.getSingleMetric('ingest_clickhouse_rows_inserted_total')?.get();
    return metric?.values.reduce((sum, v) => sum + v.value, 0) ?? 0;
  };
  const storedLatencyCount = async () => {
    const metric = await metrics.getSingleMetric('ingest_event_stored_latency_seconds')?.get();
    const count = metric?.values.find((v) => (v as { metricName?: string }).metricName === 'ingest_event_stored_latency_seconds_count');
    return count?.value ?? 0;
  };
  return { consumer, rowsInserted, storedLatencyCount, metricsText: () => metrics.metrics() };
}

async function countRows(accountId: string): Promise<number> {
  const [row] = await clickhouse.ch.query<{ n: string }>(`SELECT count() AS n FROM events WHERE account_id = '${accountId}'`);
  return Number(row?.n ?? 0);
}

describe('storage consumer against real Kafka and ClickHouse', () => {
  it('stores produced events, and a restarted consumer resumes from the committed offset', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const groupId = `storage-${uniqueSuffix()}`;
    await produce(accountId, 0, 50);

    const first = startStorage(groupId);
    await first.consumer.start();
    await waitFor(async () => (await countRows(accountId)) === 50 || undefined, { description: '50 rows in ClickHouse' });
    await first.consumer.stop();

    const offsets = await committedOffsets(kafka.kafka, groupId, kafka.topic('eventsUnique'));
    expect([...offsets.values()].reduce((sum, o) => sum + Math.max(0, Number(o)), 0)).toBe(50);
    expect(await first.rowsInserted()).toBe(50);
    expect(await first.storedLatencyCount()).toBe(50);
    // The stage's RED metrics: every message stored, batches timed, none failed.
    const text = await first.metricsText();
    expect(sampleValue(text, 'ingest_consumer_messages_total', { consumer: 'storage', outcome: 'ok' })).toBe(50);
    expect(sampleValue(text, 'ingest_consumer_messages_total', { consumer: 'storage', outcome: 'dead_letter' })).toBe(0);
    expect(sampleValue(text, 'ingest_consumer_batch_duration_seconds_count', { consumer: 'storage' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(text, 'ingest_consumer_batch_failures_total', { consumer: 'storage' })).toBe(0);

    await produce(accountId, 50, 80);
    const second = startStorage(groupId);
    await second.consumer.start();
    try {
      // ClickHouse can show the rows a moment before the writer's await returns and counts them:
      // wait for both, then require exactly the 30 new ones.
      await waitFor(async () => ((await countRows(accountId)) === 80 && (await second.rowsInserted()) >= 30) || undefined, {
        description: '80 rows in ClickHouse, counted by the second consumer',
      });
      // Only the 30 new events were consumed: nothing before the committed offsets came back.
      expect(await second.rowsInserted()).toBe(30);
    } finally {
      await second.consumer.stop();
    }

    const [stored] = await clickhouse.ch.query<Record<string, unknown>>(
      `SELECT event_name, email, domain, event_time, event_time_ms, properties, source, job_id FROM events FINAL WHERE account_id = '${accountId}' AND event_id = 'evt-7'`,
    );
    expect(stored).toEqual({
      event_name: 'Signed Up',
      email: 'user7@example.com',
      domain: '',
      event_time: '2026-01-15 10:00:00',
      event_time_ms: String(Date.UTC(2026, 0, 15, 10, 0, 0, 7)),
      properties: JSON.stringify({ n: 7, nested: { ok: true }, quote: "it's \\ fine" }),
      source: 'api',
      job_id: '',
    });
    const [dedup] = await clickhouse.ch.query<{ n: string }>(`SELECT count() AS n FROM events_dedup WHERE account_id = '${accountId}'`);
    expect(Number(dedup?.n)).toBe(80);
  });

  it('dead-letters a poison message with its reason and keeps storing the good ones', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const topic = kafka.topic('eventsUnique');
    // Same key => same partition: the poison message sits between two good ones.
    const key = `${accountId}:same`;
    await producer.send(topic, [
      { key, value: JSON.stringify(record(accountId, 1)) },
      { key, value: '{"v":1, not json' },
      { key, value: JSON.stringify({ ...record(accountId, 2), v: 99 }) },
      { key, value: JSON.stringify(record(accountId, 3)) },
      // Not poison, but it used to be: ClickHouse refuses an insert holding a lone surrogate.
      { key, value: JSON.stringify({ ...record(accountId, 4), eventName: 'lone \ud800 surrogate' }) },
      // Separators of the TabSeparated rows inside values: stored exactly.
      { key, value: JSON.stringify({ ...record(accountId, 5), eventName: 'tab\there\nnew\\line', properties: { s: 'a\tb\nc\\d"e' } }) },
    ]);

    const storage = startStorage(`storage-${uniqueSuffix()}`);
    const letters: { value: string; headers: Record<string, string> }[] = [];
    const dlqReader = createBatchConsumer(kafka.kafka, {
      name: 'dlq-reader',
      groupId: `dlq-${uniqueSuffix()}`,
      topics: [kafka.topic('deadLetters')],
      logger: testLogger(),
      handleBatch: async (messages) => {
        for (const m of messages) letters.push({ value: m.value?.toString() ?? '', headers: m.headers });
      },
    });
    await Promise.all([storage.consumer.start(), dlqReader.start()]);
    try {
      await waitFor(async () => (await countRows(accountId)) === 4 || undefined, { description: 'the four good events stored' });
      const [separators] = await clickhouse.ch.query<{ event_name: string; properties: string }>(
        `SELECT event_name, properties FROM events WHERE account_id = '${accountId}' AND event_id = 'evt-5'`,
      );
      expect(separators).toEqual({ event_name: 'tab\there\nnew\\line', properties: JSON.stringify({ s: 'a\tb\nc\\d"e' }) });
      const [lone] = await clickhouse.ch.query<{ event_name: string }>(
        `SELECT event_name FROM events WHERE account_id = '${accountId}' AND event_id = 'evt-4'`,
      );
      expect(lone?.event_name).toBe('lone \ufffd surrogate');
      const mine = await waitFor(
        () => {
          const found = letters.filter((l) => l.value.includes(accountId) || l.value === '{"v":1, not json');
          return found.length >= 2 ? found : undefined;
        },
        { description: 'two dead letters' },
      );
      const byCode = Object.fromEntries(mine.map((l) => [l.headers[DEAD_LETTER_HEADERS.code], l.headers]));
      expect(byCode.invalid_json?.[DEAD_LETTER_HEADERS.sourceTopic]).toBe(topic);
      expect(byCode.invalid_json?.[DEAD_LETTER_HEADERS.reason]).toMatch(/not valid JSON/);
      // The reason never quotes the message (JSON.parse's own message would).
      expect(byCode.invalid_json?.[DEAD_LETTER_HEADERS.reason]).not.toContain('{"v"');
      expect(byCode.unknown_version?.[DEAD_LETTER_HEADERS.reason]).toMatch(/version 99/);
      expect(Number(byCode.unknown_version?.[DEAD_LETTER_HEADERS.sourceOffset])).toBeGreaterThanOrEqual(0);
      expect(byCode.unknown_version?.[DEAD_LETTER_HEADERS.sourcePartition]).toMatch(/^\d+$/);
    } finally {
      await Promise.all([storage.consumer.stop(), dlqReader.stop()]);
    }
  });

  it('reads again what a refused insert held: the consumer restarts at its committed offsets and skips nothing', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const groupId = `storage-${uniqueSuffix()}`;
    await produce(accountId, 0, 40);
    let refused = 0;
    // The first insert is refused for good (not a retryable outage): commits stop, and with no
    // further traffic only the restart can bring its rows back.
    const storage = startStorage(groupId, (real) => ({
      async write(rows, ctx) {
        if (refused === 0 && rows.length > 0) {
          refused++;
          throw new AppError('insert_refused', 'refused once by the test', { retryable: false });
        }
        return real.write(rows, ctx);
      },
    }));
    await storage.consumer.start();
    try {
      await waitFor(async () => (await countRows(accountId)) === 40 || undefined, { description: 'all 40 rows stored after the refusal', timeoutMs: 60_000 });
      expect(refused).toBe(1);
      // The group read the topic from its start (earlier tests' events too): committed offsets
      // must reach the end of every partition, none stuck before the refused rows.
      const ends = createEndOffsetsReader(kafka.kafka);
      await ends.connect();
      const end = new Map((await ends.endOffsets([kafka.topic('eventsUnique')]).finally(() => ends.disconnect())).map((e) => [e.partition, String(e.high)]));
      await waitFor(
        async () => {
          const offsets = await committedOffsets(kafka.kafka, groupId, kafka.topic('eventsUnique'));
          return [...end].every(([partition, high]) => offsets.get(partition) === high) || undefined;
        },
        { description: 'offsets committed up to the end of every partition' },
      );
    } finally {
      await storage.consumer.stop();
    }
  });
});

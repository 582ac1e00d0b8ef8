import {
  type BatchConsumer,
  type ConsumedMessage,
  createBatchConsumer,
  createConsumerStageMetrics,
  type DeadLetter,
  type DeadLetterSink,
  type KafkaClient,
  type Logger,
  METRIC_NAMES,
  type Registry,
} from '@ingest/shared';
import { Histogram } from 'prom-client';
import type { ClickHouseWriter } from './clickhouse.writer.js';
import { createInsertBatcher } from './insert-batcher.js';
import { createEventRecordDecoder } from './event-record.decode.js';
import { type EventRow, toEventRow } from './event-row.js';

export interface StorageConsumerDeps {
  kafka: KafkaClient;
  topic: string;
  groupId: string;
  writer: ClickHouseWriter;
  deadLetters: DeadLetterSink;
  logger: Logger;
  metrics: Registry;
  partitionsConsumedConcurrently?: number;
  /** One insert gathers the batches of all partitions, up to this many rows or this long. */
  batchMaxRows?: number;
  batchMaxWaitMs?: number;
  now?: () => number;
}

/**
 * events.unique -> ClickHouse `events`, in inserts of up to 10,000 rows or 1 s gathered across
 * partitions. Offsets are committed only after both the insert and the dead letters of the batch
 * are durable; a crash in between re-delivers the batch, and the
 * ReplacingMergeTree table absorbs the repeated rows.
 */
export function createStorageConsumer(deps: StorageConsumerDeps): BatchConsumer {
  const decode = createEventRecordDecoder();
  // Accept (gateway receipt) -> stored in ClickHouse: the pipeline's end-to-end latency.
  const storedLatency = new Histogram({
    name: METRIC_NAMES.eventStoredLatency,
    help: 'Seconds from the gateway accepting an event to its row being stored in ClickHouse',
    buckets: [0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900],
    registers: [deps.metrics],
  });
  const stage = createConsumerStageMetrics(deps.metrics, 'storage', ['ok', 'dead_letter']);
  const batcher = createInsertBatcher({ writer: deps.writer, maxRows: deps.batchMaxRows ?? 10_000, maxWaitMs: deps.batchMaxWaitMs ?? 1_000 });
  const now = deps.now ?? Date.now;

  function split(messages: ConsumedMessage[]): { rows: EventRow[]; letters: DeadLetter[] } {
    const insertedAt = now();
    const rows: EventRow[] = [];
    const letters: DeadLetter[] = [];
    for (const message of messages) {
      const result = decode(message.value);
      if (result.ok) rows.push(toEventRow(result.record, insertedAt));
      else letters.push({ message, code: result.code, reason: result.reason });
    }
    return { rows, letters };
  }

  return createBatchConsumer(deps.kafka, {
    name: 'storage-consumer',
    groupId: deps.groupId,
    topics: [deps.topic],
    logger: deps.logger,
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently ?? 1,
    handleBatch: stage.instrument(async (messages, ctx) => {
      const { rows, letters } = split(messages);
      await batcher.add(rows, ctx);
      const storedAtMs = now();
      for (const row of rows) storedLatency.observe(Math.max(0, storedAtMs - row.received_at_ms) / 1000);
      await deps.deadLetters.publish(letters);
      stage.handled('ok', rows.length);
      stage.handled('dead_letter', letters.length);
    }),
  });
}

import type { EventRecord } from '@ingest/schemas';
import {
  type BatchConsumer,
  type BatchContext,
  createStageConsumer,
  type DeadLetterSink,
  drop,
  type KafkaClient,
  type Logger,
  METRIC_NAMES,
  ok,
  type Registry,
} from '@ingest/platform';
import { Histogram } from 'prom-client';
import type { ClickHouseWriter } from './clickhouse.writer.js';
import { createInsertBatcher } from './insert-batcher.js';
import type { ErasureFilter } from './erasure.filter.js';
import { createEventRecordDecoder, toEventLine } from '@ingest/domain';

export interface StorageConsumerDeps {
  kafka: KafkaClient;
  topic: string;
  groupId: string;
  writer: ClickHouseWriter;
  deadLetters: DeadLetterSink;
  /** Events of erased people and companies are dropped (erasure.filter.ts); absent: none are. */
  erasures?: ErasureFilter;
  logger: Logger;
  metrics: Registry;
  partitionsConsumedConcurrently?: number;
  /** One insert gathers the batches of all partitions, up to this many rows or this long. */
  batchMaxRows?: number;
  batchMaxWaitMs?: number;
  /** Inserts start at least this far apart; rows gathered meanwhile join (default 500 ms). */
  minInsertIntervalMs?: number;
  now?: () => number;
  /** The `events` line of a record (default toEventLine, the legacy shape); the writer names its columns. */
  formatRow?: (record: EventRecord, insertedAtMs: number) => string;
}

/**
 * events.unique -> ClickHouse `events`, in inserts of up to 10,000 rows or 1 s gathered across
 * partitions. Offsets are committed only after both the insert and the dead letters of the batch
 * are durable; a crash in between re-delivers the batch, and the ReplacingMergeTree table
 * absorbs the repeated rows.
 *
 * Handlers do not wait for their insert: the consumer fetches again only once every batch of a fetch
 * is handled, so waiting would leave the consumer idle during each insert and each insert idle
 * during each fetch. A batch's offset is committed when its insert succeeded (inserts run one at
 * a time, in order, at most two a second), and handlers wait only while ten inserts' worth of
 * rows are queued.
 * An insert that fails stops all later commits and restarts the consumer, which reads the lost
 * rows again from the committed offsets; every rejoin (restart or rebalance) starts a session
 * whose reads begin at the committed offsets, and commits of an older session are dropped.
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
  const maxRows = deps.batchMaxRows ?? 10_000;
  const batcher = createInsertBatcher({
    writer: deps.writer,
    maxRows,
    maxWaitMs: deps.batchMaxWaitMs ?? 1_000,
    minIntervalMs: deps.minInsertIntervalMs ?? 500,
  });
  const log = deps.logger.child({ component: 'storage' });
  const now = deps.now ?? Date.now;
  const formatRow = deps.formatRow ?? toEventLine;

  let session = 0;
  let failure: unknown;
  const commits = new Set<Promise<void>>();
  // One OffsetCommit per insert, not one per batch: at low load an insert holds hundreds of
  // small batches, and every commit is a request of its own (with kafkajs, a burst of them
  // after each insert clogged the coordinator connection in the benchmark).
  const toCommit = new Map<string, { topic: string; partition: number; offset: bigint; session: number }>();
  let committing: Promise<void> | undefined;

  function scheduleCommit(topic: string, partition: number, offset: bigint, batchSession: number): Promise<void> {
    const key = `${topic}\u0000${partition}`;
    const previous = toCommit.get(key);
    if (!previous || previous.session !== batchSession || previous.offset < offset) toCommit.set(key, { topic, partition, offset, session: batchSession });
    committing ??= flushCommits();
    return committing;
  }

  async function flushCommits(): Promise<void> {
    // The other batches of the same insert resolve in this turn of the event loop: wait for them.
    try {
      await new Promise<void>((resolve) => setImmediate(resolve));
      while (toCommit.size > 0) {
        const due = [...toCommit.values()].filter((c) => c.session === session && failure === undefined);
        toCommit.clear();
        if (due.length === 0) continue;
        await consumer.commitMany(due.map(({ topic, partition, offset }) => ({ topic, partition, offset: offset.toString() }))).catch((err: unknown) => {
          // The rows are stored; a lost commit only means they are read and stored again.
          log.warn({ err, partitions: due.length }, 'offset commit after insert failed');
        });
      }
    } finally {
      // In the same turn as the last look at toCommit: a later schedule starts a new round.
      committing = undefined;
    }
  }

  function afterInsert(rows: string[], receivedAtMs: number[], ctx: BatchContext, nextOffset: bigint, batchSession: number): Promise<void> {
    return batcher.add(rows, ctx).then(
      async () => {
        const storedAtMs = now();
        for (const at of receivedAtMs) storedLatency.observe(Math.max(0, storedAtMs - at) / 1000);
        if (failure !== undefined || batchSession !== session) return; // read again from the committed offset
        await scheduleCommit(ctx.topic, ctx.partition, nextOffset, batchSession);
      },
      (err: unknown) => {
        if (failure !== undefined) return;
        failure = err;
        log.error({ err, partition: ctx.partition }, 'clickhouse insert failed; reading again from the committed offsets');
        void consumer.restart('clickhouse insert failed');
      },
    );
  }

  const consumer: BatchConsumer = createStageConsumer<EventRecord>(deps, {
    name: 'storage-consumer',
    stage: 'storage',
    outcomes: ['ok', 'dead_letter', 'erased'],
    topics: [deps.topic],
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently ?? 1,
    onGroupJoin: () => {
      session++;
      failure = undefined;
    },
    beforeDisconnect: async () => {
      await batcher.drain();
      await Promise.allSettled([...commits]);
    },
    decode: (message) => decode(message.value),
    async open(messages, ctx) {
      // After a failed insert nothing more is stored or committed until the restart re-reads.
      if (failure !== undefined) return null;
      await deps.erasures?.beforeBatch();
      const insertedAt = now();
      // Rows as TabSeparated lines (formatRow's shape; the writer names its columns), and their receipt times.
      const rows: string[] = [];
      const receivedAtMs: number[] = [];
      return {
        step(record) {
          if (deps.erasures?.erased(record)) return drop('erased');
          rows.push(formatRow(record, insertedAt));
          receivedAtMs.push(record.receivedAtMs);
          return ok();
        },
        // The dead letters are durable by now; the rows' offset is committed once their insert is.
        end() {
          const nextOffset = BigInt(messages.at(-1)?.offset ?? '0') + 1n;
          const committed = afterInsert(rows, receivedAtMs, ctx, nextOffset, session);
          commits.add(committed);
          void committed.finally(() => commits.delete(committed));
          return { commitOffset: null };
        },
        // Memory bound: up to ten inserts' worth of rows (as TabSeparated lines, ~35 MB at the
        // defaults) wait. Inserts start at most twice a second, so this bounds a backlog's drain
        // at ~20 x STORAGE_BATCH_MAX_ROWS rows/s; with four it capped the writer at ~70k rows/s.
        backpressure: () => batcher.waitForRoom(10 * maxRows),
      };
    },
  });
  return consumer;
}

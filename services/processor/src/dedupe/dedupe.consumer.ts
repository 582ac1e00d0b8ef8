import type { EventRecord } from '@ingest/schemas';
import {
  type BatchConsumer,
  createBatchConsumer,
  createConsumerStageMetrics,
  type DeadLetter,
  type DeadLetterSink,
  type KafkaClient,
  type Logger,
  METRIC_NAMES,
  type OutgoingMessage,
  type Producer,
  readTopicToEnd,
  type Registry,
} from '@ingest/shared';
import { Counter, Gauge } from 'prom-client';
import { createEventRecordDecoder } from '../storage/event-record.decode.js';
import { createDedupeWindow, type DedupeWindow, dedupeKey } from './dedupe-window.js';

export interface DedupeConsumerDeps {
  kafka: KafkaClient;
  producer: Producer;
  rawTopic: string;
  uniqueTopic: string;
  changelogTopic: string;
  groupId: string;
  deadLetters: DeadLetterSink;
  logger: Logger;
  metrics: Registry;
  windowMs: number;
  partitionsConsumedConcurrently?: number;
  now?: () => number;
}

/** Per-record order downstream: a contact's (or a company's) events share a partition. */
export function identityKey(record: EventRecord): string {
  return `${record.accountId}:${record.email ?? record.domain ?? ''}`;
}

/**
 * events.raw -> events.unique, dropping repeats of (account, eventId) seen within the window.
 *
 * Every copy of an event is on the same events.raw partition (the key is account:eventId), so
 * one partition's first-seen marks decide alone. The marks live in memory per partition and
 * in the compacted changelog `dedupe.changelog`, written to the same partition number; when a
 * partition is assigned to this instance its marks are restored from there before any of its
 * messages is looked at.
 *
 * Order of effects per batch: the new events and their marks are written in one produce
 * request, then marked in memory, then the offset is committed. An event is never marked seen
 * before it is durably in events.unique. A crash between the write and the commit re-delivers
 * the batch; the restored marks then drop the copies. Only a crash after events.unique took an
 * event but before its mark was written can pass a copy on, which the idempotent sinks
 * (ReplacingMergeTree, the CRM ledger) absorb.
 */
export function createDedupeConsumer(deps: DedupeConsumerDeps): BatchConsumer {
  const now = deps.now ?? Date.now;
  const log = deps.logger.child({ component: 'dedupe' });
  const decode = createEventRecordDecoder();
  const windows = new Map<number, DedupeWindow>();
  let assignedKey = '';
  let restoring: Promise<void> = Promise.resolve();
  let batchesSinceSweep = 0;

  const hits = new Counter({ name: METRIC_NAMES.dedupeHits, help: 'Repeated events dropped by dedupe', registers: [deps.metrics] });
  const passed = new Counter({ name: METRIC_NAMES.dedupeUnique, help: 'First-seen events passed to events.unique', registers: [deps.metrics] });
  const marks = new Gauge({ name: METRIC_NAMES.dedupeMarks, help: 'First-seen marks held in memory', registers: [deps.metrics] });
  const restored = new Counter({ name: METRIC_NAMES.dedupeRestoredMarks, help: 'Marks read back from the changelog on assignment', registers: [deps.metrics] });
  const stage = createConsumerStageMetrics(deps.metrics, 'dedupe', ['ok', 'duplicate', 'dead_letter']);

  async function restore(partitions: number[]): Promise<void> {
    if (partitions.length === 0) return;
    const started = Date.now();
    const fresh = new Map(partitions.map((p) => [p, createDedupeWindow(deps.windowMs)]));
    let count = 0;
    await readTopicToEnd(deps.kafka, {
      topic: deps.changelogTopic,
      partitions,
      logger: deps.logger,
      onMessage: (m) => {
        const window = fresh.get(m.partition);
        for (const [key, firstSeenMs] of decodeMarks(m.value)) {
          window?.mark(key, firstSeenMs);
          count++;
        }
      },
    });
    for (const [p, w] of fresh) windows.set(p, w);
    restored.inc(count);
    log.info({ partitions, marks: count, ms: Date.now() - started }, 'dedupe state restored');
  }

  /** Follows the assignment: forgets partitions that left, restores the ones that came. */
  function syncAssignment(): Promise<void> {
    const assigned = [...(consumer.assignments()[deps.rawTopic] ?? [])].sort((a, b) => a - b);
    const key = assigned.join(',');
    if (key !== assignedKey) {
      assignedKey = key;
      for (const p of windows.keys()) if (!assigned.includes(p)) windows.delete(p);
      const missing = assigned.filter((p) => !windows.has(p));
      restoring = restoring.then(() => restore(missing));
    }
    return restoring;
  }

  async function windowOf(partition: number): Promise<DedupeWindow> {
    await syncAssignment();
    if (!windows.has(partition)) {
      // The batch arrived before the assignment event was seen: restore this one now.
      restoring = restoring.then(() => (windows.has(partition) ? undefined : restore([partition])));
      await restoring;
    }
    const window = windows.get(partition);
    if (!window) throw new Error(`dedupe state for partition ${partition} is missing after restore`);
    return window;
  }

  const consumer: BatchConsumer = createBatchConsumer(deps.kafka, {
    name: 'dedupe-consumer',
    groupId: deps.groupId,
    topics: [deps.rawTopic],
    logger: deps.logger,
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently ?? 1,
    // Smaller fetches keep each produce request (and kafkajs's per-request work) moderate.
    maxBytesPerPartition: 1024 * 1024,
    handleBatch: stage.instrument(async (messages, ctx) => {
      const window = await windowOf(ctx.partition);
      const unique: OutgoingMessage[] = [];
      const fresh: [string, number][] = [];
      // Marks of this batch, applied to the window only once they are durable.
      const inBatch = createDedupeWindow(deps.windowMs);
      const letters: DeadLetter[] = [];
      let duplicates = 0;

      for (const message of messages) {
        const result = decode(message.value);
        if (!result.ok) {
          letters.push({ message, code: result.code, reason: result.reason });
          continue;
        }
        const record = result.record;
        const key = dedupeKey(record.accountId, record.eventId);
        if (inBatch.seen(key, record.receivedAtMs) || window.seen(key, record.receivedAtMs)) {
          duplicates++;
          continue;
        }
        inBatch.mark(key, record.receivedAtMs);
        unique.push({ key: identityKey(record), value: message.value ?? '' });
        fresh.push([key, record.receivedAtMs]);
      }

      try {
        await deps.producer.sendBatch([
          { topic: deps.uniqueTopic, messages: unique },
          { topic: deps.changelogTopic, messages: encodeMarks(fresh, ctx.partition, messages[0]?.offset ?? '0') },
        ]);
      } catch (err) {
        // "Failed" may still mean written (a timeout while the request was in flight). Forget
        // this partition's marks, wait until the send has really ended, and let the retried
        // batch restore them from the changelog: a batch that did land is then recognised.
        windows.delete(ctx.partition);
        await deps.producer.settled();
        throw err;
      }
      for (const [key, firstSeenMs] of fresh) window.mark(key, firstSeenMs);
      await deps.deadLetters.publish(letters);
      hits.inc(duplicates);
      passed.inc(unique.length);
      stage.handled('ok', unique.length);
      stage.handled('duplicate', duplicates);
      stage.handled('dead_letter', letters.length);

      if (++batchesSinceSweep >= 500) {
        batchesSinceSweep = 0;
        for (const w of windows.values()) w.sweep(now());
      }
      marks.set([...windows.values()].reduce((sum, w) => sum + w.size, 0));
    }),
  });
  return consumer;
}

/**
 * Marks travel in batches, not one message per event: a batch's first-seen marks are one (or a
 * few) changelog messages, keyed by partition and first offset. The changelog is kept by time
 * (8 days) rather than compacted, since each key is marked once per window anyway.
 */
const MARKS_PER_MESSAGE = 2_000;

export function encodeMarks(marks: readonly [string, number][], partition: number, firstOffset: string): OutgoingMessage[] {
  const out: OutgoingMessage[] = [];
  for (let i = 0; i < marks.length; i += MARKS_PER_MESSAGE) {
    out.push({ key: `${partition}:${firstOffset}:${i}`, value: JSON.stringify({ v: 1, marks: marks.slice(i, i + MARKS_PER_MESSAGE) }), partition });
  }
  return out;
}

export function decodeMarks(value: Buffer | null): [string, number][] {
  try {
    const parsed = JSON.parse(value?.toString() ?? 'null') as { v?: unknown; marks?: unknown };
    if (parsed?.v !== 1 || !Array.isArray(parsed.marks)) return [];
    return parsed.marks.filter((m): m is [string, number] => Array.isArray(m) && typeof m[0] === 'string' && Number.isFinite(m[1]));
  } catch {
    return [];
  }
}

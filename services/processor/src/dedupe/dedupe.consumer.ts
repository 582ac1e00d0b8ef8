import type { EventRecord } from '@ingest/schemas';
import {
  type BatchConsumer,
  type ConsumedMessage,
  createStageConsumer,
  type Decoded,
  type DeadLetterSink,
  drop,
  type KafkaClient,
  type Logger,
  METRIC_NAMES,
  passOn,
  type Producer,
  readTopicToEnd,
  type Registry,
} from '@ingest/platform';
import { createEventRecordDecoder, IDENTITY_HEADER, identityKey, parseRawEventKey, uniqueEventKey } from '@ingest/domain';
import { Counter, Gauge } from 'prom-client';
import { decodeMarks, encodeMarks, type Mark } from './changelog-marks.js';
import { createDedupeWindow, type DedupeWindow, type Fingerprint, fingerprint, fingerprintOfKey } from './dedupe-window.js';
import type { IdentityStep } from './identity.step.js';

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
  /** Memory bound: marks held per partition; beyond it the oldest are dropped (see docs/architecture.md, "Data flow"). */
  maxMarksPerPartition?: number;
  partitionsConsumedConcurrently?: number;
  /** The identity map (identity.step.ts); without it events pass on as they came. */
  identity?: IdentityStep;
  /** Topic of the identity map's records (with `identity`). */
  identitiesTopic?: string;
  now?: () => number;
}

/** What dedupe needs of a raw event: its fingerprint, first-seen time and events.unique key. */
interface RawEventView {
  fp: Fingerprint;
  receivedAtMs: number;
  uniqueKey: string;
}

/**
 * The view of a message our own producers wrote (key `accountId:eventId`, identity header),
 * read without parsing its value: the gateway and the job runner validated it before writing,
 * and storage and the CRM sink decode it in full. Undefined for any other message.
 */
export function fastView(message: ConsumedMessage): RawEventView | undefined {
  const identity = message.headers[IDENTITY_HEADER];
  if (identity === undefined || message.key === null || !message.value?.length) return undefined;
  const key = message.key.toString('utf8');
  const parsed = parseRawEventKey(key);
  if (parsed === undefined) return undefined;
  // The Kafka timestamp is when the producer wrote it, right after receipt: close enough for a
  // window of days, and it spares the parse.
  return { fp: fingerprintOfKey(key), receivedAtMs: message.timestamp, uniqueKey: identityKey(parsed.accountId, identity) };
}

function fullView(record: EventRecord): RawEventView {
  return {
    fp: fingerprint(record.accountId, record.eventId),
    receivedAtMs: record.receivedAtMs,
    uniqueKey: uniqueEventKey(record),
  };
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
 * Order of effects per batch: the new events (with the identity map's new records) are written
 * first; once Kafka acknowledged them they are marked in memory, and then their marks are
 * written to the changelog; then the offset is committed. A mark is never written before its
 * event is durably in events.unique, so no failure can make a retried batch drop an event that
 * never arrived. Events and marks used to share one produce request, assumed atomic; on a
 * cluster it is one request per partition leader, and a broker killed under load let the marks
 * land while the events did not: the retried batch dropped them as repeats (3 of 15,460 events
 * answered 202 were lost in `npm run test:scale`).
 *
 * The price is copies, never losses: a send reported failed that did land (a timeout while in
 * flight), or a crash between the events' write and the marks' write, passes the batch's events
 * again when it is retried. The sinks absorb copies (ReplacingMergeTree and its FINAL/
 * `events_dedup` reads, the CRM ledger); docs/architecture.md says how to count. A failed
 * marks write keeps the marks in memory (the events are durable) and sends them again with the
 * partition's next batch; a partition that moves to another instance before then loses those
 * marks, so repeats of those events sent later by a client may pass once more.
 *
 * The identity map (identity.step.ts) rides on the same order: its entries are read before the
 * batch, its new records go in the events' request (after any refused alias's dead letter), and
 * into the Redis index only once that request is durable. A batch retried after a failed send
 * computes and writes them again (the writes are idempotent).
 */
export function createDedupeConsumer(deps: DedupeConsumerDeps): BatchConsumer {
  const now = deps.now ?? Date.now;
  const log = deps.logger.child({ component: 'dedupe' });
  const decode = createEventRecordDecoder();
  const windows = new Map<number, DedupeWindow>();
  let assignedKey = '';
  let restoring: Promise<void> = Promise.resolve();
  let batchesSinceSweep = 0;
  /** Marks of durable events whose changelog write failed, per partition, sent with the next batch. */
  const unwrittenMarks = new Map<number, readonly Mark[]>();
  const maxUnwritten = deps.maxMarksPerPartition ?? 1_000_000;

  const hits = new Counter({ name: METRIC_NAMES.dedupeHits, help: 'Repeated events dropped by dedupe', registers: [deps.metrics] });
  const passed = new Counter({ name: METRIC_NAMES.dedupeUnique, help: 'First-seen events passed to events.unique', registers: [deps.metrics] });
  const marks = new Gauge({ name: METRIC_NAMES.dedupeMarks, help: 'First-seen marks held in memory', registers: [deps.metrics] });
  const markBytes = new Gauge({ name: METRIC_NAMES.dedupeMarkBytes, help: 'Bytes of memory the first-seen marks take', registers: [deps.metrics] });
  const evictedMarks = new Counter({
    name: METRIC_NAMES.dedupeEvictedMarks,
    help: 'Marks dropped before their window ended because a partition held its maximum',
    registers: [deps.metrics],
  });
  const windowOptions = { maxMarks: deps.maxMarksPerPartition, onEvict: (count: number) => evictedMarks.inc(count) };
  const unwrittenGauge = new Gauge({
    name: METRIC_NAMES.dedupeUnwrittenMarks,
    help: 'Marks of stored events not yet in the changelog (its write failed; sent with the next batch)',
    registers: [deps.metrics],
  });
  const restored = new Counter({ name: METRIC_NAMES.dedupeRestoredMarks, help: 'Marks read back from the changelog on assignment', registers: [deps.metrics] });

  async function restore(partitions: number[]): Promise<void> {
    if (partitions.length === 0) return;
    const started = Date.now();
    const fresh = new Map(partitions.map((p) => [p, createDedupeWindow(deps.windowMs, windowOptions)]));
    let count = 0;
    await readTopicToEnd(deps.kafka, {
      topic: deps.changelogTopic,
      partitions,
      logger: deps.logger,
      onMessage: (m) => {
        const window = fresh.get(m.partition);
        for (const [fp, firstSeenMs] of decodeMarks(m.value)) {
          window?.mark(fp, firstSeenMs);
          count++;
        }
      },
    });
    for (const [p, w] of fresh) windows.set(p, w);
    restored.inc(count);
    log.info({ partitions, marks: count, ms: Date.now() - started }, 'dedupe state restored');
  }

  /**
   * Writes a batch's marks, with any of the partition's earlier marks whose write failed. A
   * failure keeps them for the next batch instead of failing this one: its events are durable
   * and marked in memory, and a retry would only pass nothing and write nothing.
   */
  async function writeMarks(partition: number, fresh: readonly Mark[], firstOffset: string): Promise<void> {
    const owed = unwrittenMarks.get(partition) ?? [];
    const all = owed.length > 0 ? [...owed, ...fresh] : fresh;
    if (all.length === 0) return;
    try {
      await deps.producer.sendBatch([{ topic: deps.changelogTopic, messages: encodeMarks(all, partition, firstOffset) }]);
      unwrittenMarks.delete(partition);
    } catch (err) {
      // Bounded like the window itself: the oldest go first.
      const kept = all.length > maxUnwritten ? all.slice(all.length - maxUnwritten) : all;
      unwrittenMarks.set(partition, kept);
      unwrittenGauge.set([...unwrittenMarks.values()].reduce((sum, m) => sum + m.length, 0));
      log.warn({ err, partition, marks: kept.length }, 'dedupe marks not written; sending them with the next batch');
      return;
    }
    unwrittenGauge.set([...unwrittenMarks.values()].reduce((sum, m) => sum + m.length, 0));
  }

  /** Follows the assignment: forgets partitions that left, restores the ones that came. */
  function syncAssignment(): Promise<void> {
    const assigned = [...(consumer.assignments()[deps.rawTopic] ?? [])].sort((a, b) => a - b);
    const key = assigned.join(',');
    if (key !== assignedKey) {
      assignedKey = key;
      for (const p of windows.keys()) if (!assigned.includes(p)) windows.delete(p);
      for (const p of unwrittenMarks.keys()) if (!assigned.includes(p)) unwrittenMarks.delete(p);
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

  /** A raw event's view without parsing it when our own producers wrote it, else from the decoded record. */
  function decodeView(message: ConsumedMessage): Decoded<RawEventView> {
    const view = fastView(message);
    if (view) return { ok: true, record: view };
    const result = decode(message.value);
    return result.ok ? { ok: true, record: fullView(result.record) } : result;
  }

  const consumer: BatchConsumer = createStageConsumer<RawEventView>(deps, {
    name: 'dedupe-consumer',
    stage: 'dedupe',
    outcomes: ['ok', 'duplicate', 'dead_letter'],
    topics: [deps.rawTopic],
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently ?? 1,
    // Smaller fetches keep each produce request (and kafkajs's per-request work) moderate.
    maxBytesPerPartition: 1024 * 1024,
    decode: decodeView,
    async open(messages, ctx) {
      const window = await windowOf(ctx.partition);
      const identities = deps.identity ? await deps.identity.prepare(messages) : undefined;
      const fresh: Mark[] = [];
      // Marks of this batch, applied to the window only once they are durable.
      const inBatch = createDedupeWindow(deps.windowMs);
      let duplicates = 0;
      return {
        step({ fp, receivedAtMs, uniqueKey }, message) {
          if (inBatch.seen(fp, receivedAtMs) || window.seen(fp, receivedAtMs)) {
            duplicates++;
            return drop('duplicate');
          }
          inBatch.mark(fp, receivedAtMs);
          fresh.push([fp, receivedAtMs]);
          // The key is the message's own (before the map's email is added): one person, one partition.
          return passOn({ key: uniqueKey, value: identities ? identities.apply(message) : (message.value ?? '') });
        },
        // The events first; their marks only once the events are durable (see the module comment).
        async publish(unique) {
          // Refused aliases first: a crash after the events' write must not lose them (a repeat is harmless).
          if (identities) await deps.deadLetters.publish(identities.conflicts());
          const links = identities?.records() ?? [];
          try {
            await deps.producer.sendBatch([
              { topic: deps.uniqueTopic, messages: unique },
              ...(links.length > 0 && deps.identitiesTopic ? [{ topic: deps.identitiesTopic, messages: links }] : []),
            ]);
          } catch (err) {
            // "Failed" may still mean written (a timeout while the request was in flight): wait
            // until the send has really ended, so the retry does not overtake it. No mark of this
            // batch was written, so the retry passes its events again: copies at worst, no loss.
            await deps.producer.settled();
            throw err;
          }
          for (const [fp, firstSeenMs] of fresh) window.mark(fp, firstSeenMs);
          await identities?.commit();
          await writeMarks(ctx.partition, fresh, messages[0]?.offset ?? '0');
        },
        end() {
          hits.inc(duplicates);
          passed.inc(fresh.length);
          if (++batchesSinceSweep >= 500) {
            batchesSinceSweep = 0;
            for (const w of windows.values()) w.sweep(now());
          }
          const held = [...windows.values()];
          marks.set(held.reduce((sum, w) => sum + w.size, 0));
          markBytes.set(held.reduce((sum, w) => sum + w.bytes, 0));
        },
      };
    },
  });
  return consumer;
}

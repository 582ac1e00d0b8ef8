import { setTimeout as sleep } from 'node:timers/promises';
import type { EventRecord } from '@ingest/schemas';
import {
  type BatchContext,
  type Component,
  type ConsumedMessage,
  createStageConsumer,
  type DeadLetterSink,
  drop,
  type KafkaClient,
  type Logger,
  ok,
  type Registry,
} from '@ingest/platform';
import { createEventRecordDecoder, type SuppressionList } from '@ingest/domain';
import { createCommittableOffsets, type CommittableOffsets } from './committable-offsets.js';
import type { SinkEvent, SyncEngine } from './sync.engine.js';

/**
 * The crm-sink's consumer group on events.unique (and crm.replay, where replayed CRM dead
 * letters arrive). A batch is handed to the sync engine and the handler returns at once, so the
 * partition keeps flowing while some account waits on its CRM; offsets are committed as work
 * finishes, per partition only up to the lowest unfinished offset. When a partition holds
 * `maxUnfinishedPerPartition` unfinished events, its handler waits (heartbeating): that pauses
 * the partition and bounds memory.
 */
export interface SinkConsumerDeps {
  kafka: KafkaClient;
  topics: string[];
  groupId: string;
  engine: SyncEngine;
  /** For messages that are not event records (they cannot be synced, ever). */
  deadLetters: DeadLetterSink;
  /**
   * The erasure suppression list (docs/erasure.md): an erased person's or company's events,
   * from events.unique or a CRM replay, are not synced. Caught up before each batch.
   */
  erasures?: Pick<SuppressionList, 'sync' | 'suppressed'>;
  logger: Logger;
  metrics: Registry;
  maxUnfinishedPerPartition: number;
  partitionsConsumedConcurrently?: number;
}

const BACKPRESSURE_POLL_MS = 100;

export function createSinkConsumer(deps: SinkConsumerDeps): Component {
  const log = deps.logger.child({ component: 'crm-sink-consumer' });
  const decode = createEventRecordDecoder();
  const trackers = new Map<string, CommittableOffsets>();
  const committed = new Map<string, string>();
  const committing = new Map<string, Promise<void>>();

  // Commits are serialised per partition and only move forward.
  function commit(topic: string, partition: number, tracker: CommittableOffsets): Promise<void> {
    const id = `${topic}/${partition}`;
    const previous = committing.get(id) ?? Promise.resolve();
    const next = previous.then(async () => {
      if (trackers.get(id) !== tracker) return; // a newer session of this partition owns the commits
      const offset = tracker.committable();
      if (offset === undefined || offset === committed.get(id)) return;
      try {
        await consumer.commit(topic, partition, offset);
        committed.set(id, offset);
      } catch (err) {
        log.warn({ err, topic, partition, offset }, 'offset commit refused; the work stays re-readable');
      }
    });
    committing.set(id, next);
    return next;
  }

  function trackerFor(messages: ConsumedMessage[], ctx: BatchContext): CommittableOffsets {
    const id = `${ctx.topic}/${ctx.partition}`;
    let tracker = trackers.get(id);
    const first = BigInt(messages[0]?.offset ?? '0');
    const next = tracker?.next();
    // A batch that starts before where the last one ended is a new session (restart,
    // rebalance): the old tracker's work may still finish, but it no longer commits. One that
    // starts later only skips offsets that hold no message, and continues the same session.
    if (!tracker || next === undefined || first < BigInt(next)) {
      tracker = createCommittableOffsets();
      trackers.set(id, tracker);
      committed.delete(id);
    }
    return tracker;
  }

  const consumer = createStageConsumer<EventRecord>(deps, {
    name: 'crm-sink-consumer',
    stage: 'crm-sink',
    outcomes: ['ok', 'dead_letter', 'erased'],
    topics: deps.topics,
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently ?? 4,
    decode: (message) => decode(message.value),
    async open(messages, ctx) {
      await deps.erasures?.sync();
      const tracker = trackerFor(messages, ctx);
      for (const message of messages) tracker.add(message.offset);
      const events: SinkEvent[] = [];
      return {
        // `ok`: handed to the sync engine, whose own outcomes are ingest_crm_sync_outcomes_total.
        step(record, message) {
          if (deps.erasures?.suppressed(record)) {
            tracker.finish(message.offset);
            return drop('erased');
          }
          events.push({
            record,
            message,
            finish: () => {
              tracker.finish(message.offset);
              void commit(ctx.topic, ctx.partition, tracker);
            },
          });
          return ok();
        },
        async end({ deadLettered }) {
          for (const l of deadLettered) tracker.finish(l.message.offset);
          await deps.engine.submit(events);
          await commit(ctx.topic, ctx.partition, tracker);
          // Commits happen here and as work finishes, never for the batch as a whole.
          return { commitOffset: null };
        },
        async backpressure() {
          while (tracker.unfinished() >= deps.maxUnfinishedPerPartition && ctx.shouldContinue()) {
            await ctx.heartbeat();
            await sleep(BACKPRESSURE_POLL_MS);
          }
        },
      };
    },
  });

  return {
    name: 'crm-sink',
    start: () => consumer.start(),
    async stop() {
      await deps.engine.stop();
      await Promise.allSettled([...committing.values()]);
      await consumer.stop();
    },
    healthy: () => consumer.healthy(),
    alive: () => consumer.alive(),
  };
}

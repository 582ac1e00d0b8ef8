import type { KafkaClient, PartitionRange } from './driver.js';
import { isRetryable } from '../errors.js';

/**
 * What this instance has applied, per partition, and who waits for it to reach a point.
 * "Reached" for a partition means every offset below the target's `high` was consumed, or the
 * partition held nothing at all (`low == high`).
 *
 * This relies on the last record of a partition always being readable: the broker never
 * compacts the active segment, and these topics carry no transaction markers (the producer is
 * idempotent, not transactional). A marker or a compacted tail would leave the position short
 * of `high` forever, and the wait would end in its timeout rather than silently.
 */
export interface OffsetTracker {
  /** Next offset to consume (last applied + 1), or undefined before the first message. */
  position(topic: string, partition: number): bigint | undefined;
  /** Records that everything below `next` was applied; wakes the waiters it satisfies. */
  advance(topic: string, partition: number, next: bigint): void;
  reached(targets: readonly PartitionRange[]): boolean;
  /** Resolves true once reached, false at the deadline; rejects with `cancelAll`'s error. */
  waitFor(targets: readonly PartitionRange[], timeoutMs: number): Promise<boolean>;
  cancelAll(reason: Error): void;
}

interface Waiter {
  targets: readonly PartitionRange[];
  settle(reached: boolean): void;
  fail(reason: Error): void;
}

export function createOffsetTracker(): OffsetTracker {
  const positions = new Map<string, bigint>();
  const waiters = new Set<Waiter>();
  const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;

  const tracker: OffsetTracker = {
    position: (topic, partition) => positions.get(keyOf(topic, partition)),
    advance(topic, partition, next) {
      const key = keyOf(topic, partition);
      const current = positions.get(key);
      if (current !== undefined && current >= next) return;
      positions.set(key, next);
      for (const waiter of waiters) if (tracker.reached(waiter.targets)) waiter.settle(true);
    },
    reached(targets) {
      return targets.every((t) => t.high <= t.low || (positions.get(keyOf(t.topic, t.partition)) ?? t.low) >= t.high);
    },
    waitFor(targets, timeoutMs) {
      if (tracker.reached(targets)) return Promise.resolve(true);
      return new Promise<boolean>((resolve, reject) => {
        const timer = setTimeout(() => waiter.settle(false), timeoutMs);
        const waiter: Waiter = {
          targets,
          settle(reached) {
            clearTimeout(timer);
            waiters.delete(waiter);
            resolve(reached);
          },
          fail(reason) {
            clearTimeout(timer);
            waiters.delete(waiter);
            reject(reason);
          },
        };
        waiters.add(waiter);
      });
    },
    cancelAll(reason) {
      for (const waiter of [...waiters]) waiter.fail(reason);
    },
  };
  return tracker;
}

/** End offsets of the state topics. */
export interface EndOffsetsReader {
  connect(): Promise<void>;
  endOffsets(topics: readonly string[]): Promise<PartitionRange[]>;
  disconnect(): Promise<void>;
}

export function createEndOffsetsReader(kafka: KafkaClient): EndOffsetsReader {
  const admin = kafka.admin();
  return {
    connect: () => admin.connect(),
    disconnect: () => admin.disconnect(),
    async endOffsets(topics) {
      const perTopic = await Promise.all(topics.map(async (topic) => withRetries(() => admin.topicOffsets(topic))));
      return perTopic.flat();
    },
  };
}

/**
 * Right after a topic is created or a broker restarts, ListOffsets can answer "not the leader"
 * for a moment although metadata already names one. Such errors are marked retriable by the
 * client; they are retried briefly here instead of failing a start.
 */
async function withRetries<T>(work: () => Promise<T>, attempts = 20, delayMs = 250): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (attempt >= attempts || !isRetryable(err)) throw err;
      await new Promise((r) => setTimeout(r, delayMs));
    }
  }
}

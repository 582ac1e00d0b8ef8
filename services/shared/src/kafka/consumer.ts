import type { Consumer as KafkaJsConsumer, KafkaMessage } from 'kafkajs';
import type { Component } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import type { KafkaClient } from './client.js';

export interface ConsumedMessage {
  topic: string;
  partition: number;
  /** Kafka offsets are 64-bit; kept as decimal strings. */
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string>;
  /** Broker/producer timestamp in epoch milliseconds. */
  timestamp: number;
}

export interface BatchContext {
  topic: string;
  partition: number;
  /** Call during long work (retries) so the group does not evict this member. */
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping or lost the partition: finish without side effects. */
  shouldContinue(): boolean;
}

/**
 * What a handler may say about the commit of its batch. `commitOffset` is the next offset to
 * read after a restart: a string commits exactly that offset (it may be lower than the end of
 * the batch, e.g. to keep a not yet finished multi-message unit re-readable), `null` commits
 * nothing for this batch, and leaving it out commits the offset after the batch.
 */
export interface BatchResult {
  commitOffset?: string | null;
}

/**
 * Handles one fetched batch of one partition. Resolving means every effect of every message is
 * durable, and the consumer then commits the offset after the batch (or the one the handler
 * returned, see BatchResult). Throwing means nothing of the batch is committed: the consumer
 * restarts and the batch is delivered again.
 * Bad data must not throw (dead-letter it instead); throwing is for infrastructure failures.
 */
export type BatchHandler = (messages: ConsumedMessage[], ctx: BatchContext) => Promise<void | BatchResult>;

export interface BatchConsumerOptions {
  name: string;
  groupId: string;
  topics: string[];
  handleBatch: BatchHandler;
  logger: Logger;
  fromBeginning?: boolean;
  /** Partitions handled in parallel by this member. */
  partitionsConsumedConcurrently?: number;
  sessionTimeoutMs?: number;
  maxBytesPerPartition?: number;
  /** How long the broker may hold a fetch waiting for data; bounds idle latency. */
  maxWaitTimeMs?: number;
  /**
   * Default true. False for members that keep no position between runs (each control plane
   * instance re-reads its compacted topics from the beginning under a group of its own): no
   * committed offsets are left behind for groups that never come back.
   */
  commitOffsets?: boolean;
  /** Told each time this member (re)joins its group: after a start, a rebalance or a crash restart. */
  onGroupJoin?: () => void;
  /**
   * Awaited by stop() after the last batch handler returned and before the consumer leaves the
   * group: a handler that finishes its work later (commitOffset: null) commits it here.
   */
  beforeDisconnect?: () => Promise<void>;
}

export interface BatchConsumer extends Component {
  /** Partitions currently assigned to this member, per topic. */
  assignments(): Record<string, number[]>;
  /**
   * Commits `offset` (the next one to read) outside a batch, for handlers that finish work after
   * their batch returned (they return `commitOffset: null`). Does nothing unless the partition is
   * assigned to this member and the consumer runs; a commit refused after a rebalance rejects.
   */
  commit(topic: string, partition: number, offset: string): Promise<void>;
  /** The same for several partitions in one OffsetCommit request; unassigned ones are left out. */
  commitMany(offsets: readonly { topic: string; partition: number; offset: string }[]): Promise<void>;
  /**
   * Leaves the group and joins again, so reading resumes at the committed offsets: for handlers
   * whose later work failed after their batch returned. Does nothing once stop() was called.
   */
  restart(reason: string): Promise<void>;
}

export function createBatchConsumer(kafka: KafkaClient, options: BatchConsumerOptions): BatchConsumer {
  const log = options.logger.child({ component: options.name, groupId: options.groupId });
  let consumer: KafkaJsConsumer | undefined;
  let running = false;
  let stopping = false;
  let crashed = false;
  let assigned: Record<string, number[]> = {};
  // Batches being handled. stop() lets them finish and commit first: kafkajs silently skips
  // commits once its own stop has begun, which would re-deliver work that is already done.
  const inFlight = new Set<Promise<unknown>>();

  let stopRequested = false;
  let restarting: Promise<void> | undefined;

  async function start(): Promise<void> {
    stopping = false;
    crashed = false;
    consumer = kafka.consumer({
      groupId: options.groupId,
      sessionTimeout: options.sessionTimeoutMs ?? 30_000,
      heartbeatInterval: 3_000,
      maxBytesPerPartition: options.maxBytesPerPartition ?? 4 * 1024 * 1024,
      maxWaitTimeInMs: options.maxWaitTimeMs ?? 250,
      allowAutoTopicCreation: false,
      // A crash (handler threw, broker gone) restarts the member from the committed offsets:
      // at-least-once, never a silent skip.
      retry: { retries: 5, initialRetryTime: 300, maxRetryTime: 5_000, restartOnFailure: async () => true },
    });
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      assigned = e.payload.memberAssignment;
      log.info({ assignment: assigned }, 'joined consumer group');
      options.onGroupJoin?.();
    });
    consumer.on(consumer.events.CRASH, (e) => {
      crashed = !e.payload.restart;
      log.error({ err: e.payload.error, restart: e.payload.restart }, 'consumer crashed');
    });
    await consumer.connect();
    for (const topic of options.topics) {
      await consumer.subscribe({ topic, fromBeginning: options.fromBeginning ?? true });
    }
    running = true;
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        // Stopping: nothing new is started (unresolved, so nothing is skipped either).
        if (batch.messages.length === 0 || stopping) return;
        const messages = batch.messages.map((m) => toConsumed(batch.topic, batch.partition, m));
        const handled = options.handleBatch(messages, {
          topic: batch.topic,
          partition: batch.partition,
          heartbeat,
          shouldContinue: () => !stopping && isRunning() && !isStale(),
        });
        inFlight.add(handled);
        let result: Awaited<typeof handled>;
        try {
          result = await handled;
        } finally {
          inFlight.delete(handled);
        }
        if (isStale()) return; // partition moved during the batch: its new owner re-reads it
        const last = batch.lastOffset();
        // Resolved even when the handler holds the commit back: this session has seen the
        // messages and must not fetch them again; only a restart re-reads from the commit.
        resolveOffset(last);
        if (options.commitOffsets === false) return;
        const offset = result?.commitOffset === undefined ? (BigInt(last) + 1n).toString() : result.commitOffset;
        if (offset === null) return;
        await consumer?.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset }]);
      },
    });
  }

  async function commitMany(offsets: readonly { topic: string; partition: number; offset: string }[]): Promise<void> {
    if (!running || !consumer || options.commitOffsets === false) return;
    const mine = offsets.filter(({ topic, partition }) => (assigned[topic] ?? []).includes(partition));
    if (mine.length > 0) await consumer.commitOffsets(mine.map(({ topic, partition, offset }) => ({ topic, partition, offset })));
  }

  async function leave(): Promise<void> {
    stopping = true;
    // Handlers see shouldContinue() === false (retry loops give up, uncommitted); a batch
    // that completes still commits because kafkajs is still running.
    await Promise.allSettled([...inFlight]);
    await options.beforeDisconnect?.().catch((err: unknown) => log.warn({ err }, 'work left unfinished at stop; it will be read again'));
    running = false;
    await consumer?.disconnect();
  }

  return {
    name: options.name,
    start,
    async stop() {
      stopRequested = true;
      await restarting;
      await leave();
    },
    restart(reason) {
      if (stopRequested) return Promise.resolve();
      restarting ??= (async () => {
        log.warn({ reason }, 'restarting the consumer to read again from the committed offsets');
        await leave();
        if (!stopRequested) await start();
      })().finally(() => {
        restarting = undefined;
      });
      return restarting;
    },
    healthy: () => running && !crashed,
    assignments: () => assigned,
    commit(topic, partition, offset) {
      return commitMany([{ topic, partition, offset }]);
    },
    commitMany,
  };
}

function toConsumed(topic: string, partition: number, m: KafkaMessage): ConsumedMessage {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) {
    if (v !== undefined) headers[k] = Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
  }
  return { topic, partition, offset: m.offset, key: m.key, value: m.value, headers, timestamp: Number(m.timestamp) };
}

import { randomBytes } from 'node:crypto';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { KafkaClient } from './driver.js';
import { type ConsumedMessage, createBatchConsumer } from './consumer.js';
import { createEndOffsetsReader, createOffsetTracker } from './offsets.js';

export interface ReadToEndOptions {
  topic: string;
  /** Only these partitions are handed to `onMessage` (and awaited); default all. */
  partitions?: readonly number[];
  /** A returned promise is awaited before the next message (a writer's backpressure bounds the memory); other results are ignored. */
  onMessage(message: ConsumedMessage): unknown;
  logger: Logger;
  timeoutMs?: number;
}

/**
 * Reads a topic from its beginning up to the end offsets it has when the call starts, then
 * stops: how a state store restores itself from its changelog. Uses a throwaway consumer group
 * that commits nothing.
 */
export async function readTopicToEnd(kafka: KafkaClient, options: ReadToEndOptions): Promise<number> {
  const wanted = options.partitions ? new Set(options.partitions) : undefined;
  const endReader = createEndOffsetsReader(kafka);
  await endReader.connect();
  let targets;
  try {
    targets = (await endReader.endOffsets([options.topic])).filter((t) => !wanted || wanted.has(t.partition));
  } finally {
    await endReader.disconnect();
  }
  if (targets.every((t) => t.high <= t.low)) return 0;

  const tracker = createOffsetTracker();
  let count = 0;
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (let attempt = 1; ; attempt++) {
    const consumer = createBatchConsumer(kafka, {
      name: 'read-to-end',
      groupId: `read-to-end.${randomBytes(6).toString('hex')}`,
      topics: [options.topic],
      logger: options.logger,
      commitOffsets: false,
      maxWaitTimeMs: 100,
      partitionsConsumedConcurrently: 4,
      handleBatch: async (messages) => {
        for (const m of messages) {
          if (wanted && !wanted.has(m.partition)) continue;
          await options.onMessage(m);
          count++;
        }
        const last = messages.at(-1);
        if (last) tracker.advance(last.topic, last.partition, BigInt(last.offset) + 1n);
      },
    });
    try {
      await consumer.start();
    } catch (err) {
      // stop() also ends the recovery a crash while joining set off in the background.
      await consumer.stop().catch(() => undefined);
      // A membership that crashed while joining (seen with kafkajs just after a broker stall,
      // in the contract's chaos suite) handed nothing over: a fresh group reads every message
      // once. Once something was handed over, a new read would hand it over twice: fail instead.
      if (count > 0 || Date.now() + 1000 > deadline) throw err;
      options.logger.warn({ err, topic: options.topic, attempt }, 'reading to the end: the consumer did not start; trying with a new group');
      await new Promise((resolve) => setTimeout(resolve, Math.min(1000 * attempt, 5000)));
      continue;
    }
    try {
      const reached = await tracker.waitFor(targets, Math.max(0, deadline - Date.now()));
      if (!reached) throw new AppError('restore_timeout', `reading ${options.topic} to its end did not finish in time`, { retryable: true });
      return count;
    } finally {
      await consumer.stop();
    }
  }
}

/**
 * Helpers of the wrapper's contract suite (contract.integration.test.ts and
 * contract.chaos.test.ts): the same promises, checked against every driver.
 */
import type { Logger } from '../../logger.js';
import { readTopicToEnd } from '../read-to-end.js';
import { KAFKA_DRIVERS, type KafkaClient, type KafkaDriverName } from '../client.js';
import { type BatchConsumer, type BatchConsumerOptions, type ConsumedMessage, createBatchConsumer } from '../consumer.js';
import type { OutgoingMessage, Producer } from '../producer.js';

/** Every driver the wrapper has; each one runs the whole suite. */
export const CONTRACT_DRIVERS: readonly KafkaDriverName[] = KAFKA_DRIVERS;

/** Every message of a topic, read from its beginning to the end offsets it has now. */
export async function readAll(kafka: KafkaClient, topic: string, logger: Logger): Promise<ConsumedMessage[]> {
  const messages: ConsumedMessage[] = [];
  await readTopicToEnd(kafka, { topic, logger, onMessage: (m) => messages.push(m), timeoutMs: 60_000 });
  return messages;
}

/** `n` messages with values `<tag>-<i>`, keyed by the same, on `partition` when given. */
export function numbered(tag: string, n: number, partition?: number, from = 0): OutgoingMessage[] {
  return Array.from({ length: n }, (_, i) => ({ key: `${tag}-${from + i}`, value: `${tag}-${from + i}`, ...(partition === undefined ? {} : { partition }) }));
}

/** Values seen more than once (a message written or delivered twice). */
export function repeated(values: readonly string[]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const v of values) (seen.has(v) ? twice : seen).add(v);
  return [...twice];
}

export interface Recorder {
  consumer: BatchConsumer;
  /** Every message handed to the handler, in order (re-deliveries included). */
  seen: ConsumedMessage[];
  batches: number[];
  values(): string[];
}

/** A consumer that records what it is handed; `handle` decides the commit (default: after the batch). */
export function recordingConsumer(
  kafka: KafkaClient,
  options: Omit<BatchConsumerOptions, 'handleBatch' | 'name'> & { handle?: BatchConsumerOptions['handleBatch'] },
): Recorder {
  const seen: ConsumedMessage[] = [];
  const batches: number[] = [];
  const consumer = createBatchConsumer(kafka, {
    name: 'contract-consumer',
    ...options,
    handleBatch: async (messages, ctx) => {
      seen.push(...messages);
      batches.push(messages.length);
      return options.handle?.(messages, ctx);
    },
  });
  return { consumer, seen, batches, values: () => seen.map((m) => m.value?.toString('utf8') ?? '') };
}

/**
 * Keeps sending numbered messages, one send at a time like a client that waits for its answer,
 * and remembers which were acknowledged. A rejected send is sent again (with its same values)
 * until acknowledged, as a client retries a 503: at-least-once is then "every value accepted is
 * in the log", and no value may be missing.
 */
export interface LoadGenerator {
  accepted: Set<string>;
  rejections: number;
  stop(): Promise<void>;
}

export function startLoad(producer: Producer, topic: string, tag: string, perSend = 20, pauseMs = 10): LoadGenerator {
  const accepted = new Set<string>();
  let stopped = false;
  let rejections = 0;
  const loop = (async () => {
    for (let n = 0; !stopped;) {
      const batch = numbered(tag, perSend, undefined, n);
      try {
        await producer.send(topic, batch);
        for (const m of batch) accepted.add(String(m.value));
        n += perSend;
        await new Promise((r) => setTimeout(r, pauseMs));
      } catch {
        rejections++;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  })();
  return {
    accepted,
    get rejections() {
      return rejections;
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

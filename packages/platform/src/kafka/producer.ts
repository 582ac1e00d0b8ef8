import { errorMessage } from '../errors.js';
import type { Compression, KafkaClient } from './driver.js';
import { connectionRefused, KafkaError } from './errors.js';
import { createSendCoalescer } from './send-coalescer.js';

export interface OutgoingMessage {
  key: string | Buffer | null;
  value: string | Buffer;
  headers?: Record<string, string>;
  /** Explicit partition (changelogs are co-partitioned with their source); default: by key. */
  partition?: number;
}

export interface TopicMessages {
  topic: string;
  messages: OutgoingMessage[];
}

export interface Producer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  /**
   * Resolves once the broker acknowledged every message with acks=all. Rejects with a
   * `KafkaError` whose code says what became of the messages:
   * - `kafka_send_expired`, `kafka_producer_full`, `kafka_unavailable`: nothing was written;
   * - `kafka_outcome_unknown`: it may have been written (retry with the same ids; consumers
   *   deduplicate);
   * - `kafka_error` (not retryable): the broker refused the request.
   */
  send(topic: string, messages: OutgoingMessage[]): Promise<void>;
  /** Several topics in one produce request per broker: the smallest window between the writes. */
  sendBatch(batches: TopicMessages[]): Promise<void>;
  /**
   * Resolves once every send made so far has really ended. A send whose caller got
   * `kafka_outcome_unknown` may still be in flight and may still be written: who must know what
   * reached Kafka (the dedupe step) waits for this before looking.
   */
  settled(): Promise<void>;
  /** Bytes waiting for their turn (in flight excluded), for the memory bound's metric and tests. */
  queuedBytes(): number;
}

export interface ProducerOptions {
  /** A send still waiting for its turn this long is dropped, unwritten (default 5 s). */
  sendTimeoutMs?: number;
  /** A send in flight is waited for this long from the call at most (default 30 s). */
  inFlightTimeoutMs?: number;
  /** Bound on bytes waiting for their turn; beyond it a send fails at once (default 64 MiB). */
  maxQueuedBytes?: number;
  /** Producer compression (docs/kafka.md: measured, and what each driver can read). */
  compression?: Compression;
}

export function createProducer(kafka: KafkaClient, options: ProducerOptions = {}): Producer {
  const deadlines = { sendTimeoutMs: options.sendTimeoutMs ?? 5_000, inFlightTimeoutMs: options.inFlightTimeoutMs ?? 30_000 };
  const producer = kafka.producer({
    ackTimeoutMs: deadlines.sendTimeoutMs,
    compression: options.compression ?? 'none',
    inFlightTimeoutMs: deadlines.inFlightTimeoutMs,
  });

  async function sendAll(batches: TopicMessages[]): Promise<void> {
    const topicMessages = batches.filter((b) => b.messages.length > 0);
    if (topicMessages.length === 0) return;
    try {
      await producer.send(topicMessages);
    } catch (err) {
      if (connectionRefused(err))
        throw new KafkaError('kafka_unavailable', `kafka is unreachable; nothing was written: ${errorMessage(err)}`, { retryable: true, cause: err });
      if (err instanceof KafkaError && !err.retryable) throw err;
      throw new KafkaError('kafka_outcome_unknown', `kafka send failed and may have been written: ${errorMessage(err)}`, { retryable: true, cause: err });
    }
  }

  // One request in flight: concurrent callers share the next request instead of queueing one
  // request each, and idempotent sends never overlap.
  const coalescer = createSendCoalescer(sendAll, { maxQueuedBytes: options.maxQueuedBytes });

  return {
    connect: () => producer.connect(),
    disconnect: () => producer.disconnect(),
    send: (topic, messages) => coalescer.send([{ topic, messages }], deadlines),
    sendBatch: (batches) => coalescer.send(batches, deadlines),
    settled: () => coalescer.idle(),
    queuedBytes: () => coalescer.queuedBytes(),
  };
}

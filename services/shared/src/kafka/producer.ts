import { AppError } from '../errors.js';
import type { KafkaClient } from './driver.js';
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
   * Resolves once the broker acknowledged every message with acks=all, rejects with a
   * retryable `kafka_unavailable` AppError after `sendTimeoutMs`. The caller must treat a
   * rejection as "maybe written": redelivery is handled by deduplication downstream.
   */
  send(topic: string, messages: OutgoingMessage[]): Promise<void>;
  /** Several topics in one produce request per broker: the smallest window between the writes. */
  sendBatch(batches: TopicMessages[]): Promise<void>;
  /**
   * Resolves once every send made so far has really ended. A send whose caller got a timeout
   * may still be queued or in flight, and may still be written: who must know what reached
   * Kafka (the dedupe step) waits for this before looking.
   */
  settled(): Promise<void>;
}

export interface ProducerOptions {
  /** Bound on one send, including retries; the gateway answers 503 after it. */
  sendTimeoutMs?: number;
}

export function createProducer(kafka: KafkaClient, options: ProducerOptions = {}): Producer {
  const sendTimeoutMs = options.sendTimeoutMs ?? 5_000;
  const producer = kafka.producer({ ackTimeoutMs: sendTimeoutMs, compression: 'none' });

  async function sendAll(batches: TopicMessages[]): Promise<void> {
    const topicMessages = batches.filter((b) => b.messages.length > 0);
    if (topicMessages.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new AppError('kafka_unavailable', `kafka did not acknowledge within ${sendTimeoutMs} ms`, { retryable: true })),
        sendTimeoutMs,
      );
    });
    try {
      await Promise.race([producer.send(topicMessages), timeout]);
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw new AppError('kafka_unavailable', `kafka send failed: ${(err as Error).message}`, { retryable: true, cause: err });
    } finally {
      clearTimeout(timer);
    }
  }

  // With one request in flight, concurrent callers share the next request instead of queueing
  // one request each. Each caller still gets its answer within sendTimeoutMs of calling.
  const coalescer = createSendCoalescer(sendAll);
  function bounded(batches: TopicMessages[]): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new AppError('kafka_unavailable', `kafka did not acknowledge within ${sendTimeoutMs} ms`, { retryable: true })),
        sendTimeoutMs,
      );
    });
    return Promise.race([coalescer.send(batches), timeout]).finally(() => clearTimeout(timer));
  }

  return {
    connect: () => producer.connect(),
    disconnect: () => producer.disconnect(),
    send(topic, messages) {
      return bounded([{ topic, messages }]);
    },
    sendBatch(batches) {
      return bounded(batches);
    },
    settled: () => coalescer.idle(),
  };
}

import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Compression, KafkaClient } from './driver.js';
import { connectionRefused, KafkaError, toKafkaError } from './errors.js';
import { createProducerRenewal, settledWithin } from './producer-renewal.js';
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
  /**
   * Can send now (readiness): false from a failed send until a send succeeds or a new producer
   * connected, and while a send has been in flight longer than `sendTimeoutMs` (a stalled broker).
   */
  ready(): boolean;
  /** False once it has not been ready for `deadAfterMs` (liveness: only a restart may help). */
  alive(): boolean;
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
  /** Not ready this long makes `alive()` false (default 5 min). */
  deadAfterMs?: number;
  logger?: Logger;
  /** A new producer replaced one whose send failed with this code (a metric counts them). */
  onRenewed?(reason: string): void;
  now?: () => number;
}

export function createProducer(kafka: KafkaClient, options: ProducerOptions = {}): Producer {
  const deadlines = { sendTimeoutMs: options.sendTimeoutMs ?? 5_000, inFlightTimeoutMs: options.inFlightTimeoutMs ?? 30_000 };
  const deadAfterMs = options.deadAfterMs ?? 5 * 60_000;
  const now = options.now ?? Date.now;
  const renewal = createProducerRenewal({
    make: () =>
      kafka.producer({
        ackTimeoutMs: deadlines.sendTimeoutMs,
        compression: options.compression ?? 'none',
        inFlightTimeoutMs: deadlines.inFlightTimeoutMs,
      }),
    logger: options.logger,
    onRenewed: options.onRenewed,
    attemptTimeoutMs: deadlines.inFlightTimeoutMs,
    now,
  });
  /** When the send now in flight started (one at a time: the coalescer serialises them). */
  let inFlightSince: number | undefined;
  /** Sends given up at their deadline whose library call has not ended yet (`settled` waits for them). */
  const abandoned = new Set<Promise<unknown>>();

  async function sendAll(batches: TopicMessages[]): Promise<void> {
    const topicMessages = batches.filter((b) => b.messages.length > 0);
    if (topicMessages.length === 0) return;
    // Throws kafka_unavailable (nothing written) when no producer could connect in time.
    const producer = await renewal.acquire(deadlines.sendTimeoutMs);
    inFlightSince = now();
    const sending = producer.send(topicMessages);
    let outcome: 'done' | 'late';
    try {
      outcome = await settledWithin(sending, deadlines.inFlightTimeoutMs);
    } catch (err) {
      const failure = toKafkaError('kafka send failed', err, () => ({ retryable: true, unavailable: false, rebalance: false }));
      // Whatever broke, this producer's sequence numbers may now be behind the broker's.
      renewal.retire(producer, failure.code);
      // Part of it written (the driver knows: other leaders acknowledged): outcome unknown, even
      // if the failed part was refused.
      if (failure.code === 'kafka_outcome_unknown') throw failure;
      if (connectionRefused(err))
        throw new KafkaError('kafka_unavailable', `kafka is unreachable; nothing was written: ${errorMessage(err)}`, { retryable: true, cause: err });
      if (!failure.retryable) throw failure;
      throw new KafkaError('kafka_outcome_unknown', `kafka send failed and may have been written: ${errorMessage(err)}`, { retryable: true, cause: failure });
    } finally {
      inFlightSince = undefined;
    }
    if (outcome === 'late') {
      // The library may keep retrying for longer (kafkajs: four request timeouts), and a broker
      // that holds the request may still write it: give this producer up now, so the next sends
      // go out under a new producer id instead of waiting behind it.
      const ending = sending.catch(() => {}).finally(() => abandoned.delete(ending));
      abandoned.add(ending);
      renewal.retire(producer, 'kafka_outcome_unknown');
      throw new KafkaError('kafka_outcome_unknown', `kafka did not answer a send within ${deadlines.inFlightTimeoutMs} ms; it may still be written`, {
        retryable: true,
      });
    }
    renewal.succeeded();
  }

  // One request in flight: concurrent callers share the next request instead of queueing one
  // request each, and idempotent sends never overlap.
  const coalescer = createSendCoalescer(sendAll, { maxQueuedBytes: options.maxQueuedBytes });

  /** Since when it has not been able to send, or undefined while it can. */
  function troubleSince(): number | undefined {
    const stuck = inFlightSince !== undefined && now() - inFlightSince > deadlines.sendTimeoutMs ? inFlightSince + deadlines.sendTimeoutMs : undefined;
    const failing = renewal.failingSince();
    return stuck === undefined ? failing : failing === undefined ? stuck : Math.min(stuck, failing);
  }

  return {
    connect: () => renewal.connect(),
    disconnect: () => renewal.disconnect(),
    send: (topic, messages) => coalescer.send([{ topic, messages }], deadlines),
    sendBatch: (batches) => coalescer.send(batches, deadlines),
    settled: async () => {
      await coalescer.idle();
      await Promise.all([...abandoned]);
    },
    queuedBytes: () => coalescer.queuedBytes(),
    ready: () => troubleSince() === undefined,
    alive: () => {
      const since = troubleSince();
      return since === undefined || now() - since < deadAfterMs;
    },
  };
}

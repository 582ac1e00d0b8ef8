import type { ConsumedMessage } from './consumer.js';
import type { Logger } from '../logger.js';
import { METRIC_NAMES, type Registry, sharedCounter } from '../metrics.js';
import type { OutgoingMessage, Producer } from './producer.js';

/**
 * A message that cannot be processed is moved, unchanged, to the dead-letter topic with why and
 * where it came from in headers, so one bad message never blocks its partition and can be
 * replayed to its source topic once the cause is fixed.
 */
export const DEAD_LETTER_HEADERS = {
  reason: 'dlq-reason',
  code: 'dlq-code',
  sourceTopic: 'dlq-source-topic',
  sourcePartition: 'dlq-source-partition',
  sourceOffset: 'dlq-source-offset',
  failedAt: 'dlq-failed-at',
  consumer: 'dlq-consumer',
} as const;

export interface DeadLetter {
  message: ConsumedMessage;
  /** Stable machine word: `invalid_json`, `schema_mismatch`, `unknown_version`, ... */
  code: string;
  /** Human-readable detail; never contains event contents beyond ids. */
  reason: string;
}

export function toDeadLetterMessage(consumer: string, { message, code, reason }: DeadLetter, now = new Date()): OutgoingMessage {
  return {
    key: message.key,
    value: message.value ?? Buffer.alloc(0),
    headers: {
      ...message.headers,
      [DEAD_LETTER_HEADERS.code]: code,
      [DEAD_LETTER_HEADERS.reason]: reason.slice(0, 1_000),
      [DEAD_LETTER_HEADERS.sourceTopic]: message.topic,
      [DEAD_LETTER_HEADERS.sourcePartition]: String(message.partition),
      [DEAD_LETTER_HEADERS.sourceOffset]: message.offset,
      [DEAD_LETTER_HEADERS.failedAt]: now.toISOString(),
      [DEAD_LETTER_HEADERS.consumer]: consumer,
    },
  };
}

export interface DeadLetterSink {
  /** Durable once resolved; the caller may then commit past the messages. */
  publish(letters: DeadLetter[]): Promise<void>;
}

export interface DeadLetterObserver {
  metrics: Registry;
  /** Value of the `consumer` label (dedupe, storage, jobs). */
  label: string;
  logger?: Logger;
}

/** Publishes dead letters and, when observed, counts them by consumer and code and logs their origin (never contents). */
export function createDeadLetterSink(producer: Producer, topic: string, consumer: string, observe?: DeadLetterObserver): DeadLetterSink {
  const counter = observe
    ? sharedCounter(observe.metrics, { name: METRIC_NAMES.deadLetters, help: 'Messages moved to the dead-letter topic', labelNames: ['consumer', 'code'] })
    : undefined;
  return {
    async publish(letters) {
      if (letters.length === 0) return;
      await producer.send(
        topic,
        letters.map((l) => toDeadLetterMessage(consumer, l)),
      );
      if (!observe || !counter) return;
      for (const l of letters) counter.inc({ consumer: observe.label, code: l.code });
      observe.logger?.warn(
        {
          consumer: observe.label,
          topic: letters[0]?.message.topic,
          partition: letters[0]?.message.partition,
          offsets: letters.map((l) => l.message.offset),
          codes: letters.map((l) => l.code),
        },
        'messages dead-lettered',
      );
    },
  };
}

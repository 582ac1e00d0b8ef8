import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Registry } from '../metrics.js';
import { type BatchConsumer, type BatchConsumerOptions, type BatchContext, type BatchResult, type ConsumedMessage, createBatchConsumer } from './consumer.js';
import { type ConsumerStage, createConsumerStageMetrics, type MessageOutcome } from './consumer.metrics.js';
import type { DeadLetter, DeadLetterSink } from './dead-letter.js';
import type { KafkaClient } from './driver.js';
import type { OutgoingMessage } from './producer.js';

/**
 * The consumer frame: every pipeline consumer (dedupe, storage, jobs, crm-sink) is the same
 * loop around a stage. Per fetched batch of one partition:
 *
 *   open the batch -> per message: decode, then step(record) -> a result
 *     -> publish what was passed on -> dead-letter what cannot be processed
 *     -> end (the stage's remaining effects; what to commit) -> count -> backpressure -> commit
 *
 * A step answers with a result instead of acting on the outcome itself, so the outcomes are
 * handled here, in one order, for every consumer:
 * - `ok`: the record is handled (stored, buffered, handed over) by the stage;
 * - `passOn`: the message goes on to the stage's output, published before anything is committed;
 * - `drop`: nothing to do (a repeat); counted under its outcome;
 * - `deadLetter`: bad data that can never be processed: moved, unchanged, to the dead-letter
 *   topic with its code and reason (so is every message the decoder refuses);
 * - `retry`: an infrastructure failure: the batch ends, nothing of it is committed, and it is
 *   read again from the committed offset (exactly what a step that throws causes);
 * - `interrupted`: the consumer is stopping or lost the partition: the batch ends here with no
 *   further effect and no commit; whoever reads the partition next starts at the committed offset.
 *
 * Offsets are committed only after the batch's outputs and dead letters are durable and `end`
 * resolved (at least once, with effects made exactly-once by the idempotent sinks); `end` may
 * commit less, or nothing, and commit later itself (BatchResult).
 */
export type StageResult =
  | { readonly kind: 'ok' }
  | { readonly kind: 'passOn'; readonly message: OutgoingMessage }
  | { readonly kind: 'drop'; readonly outcome: DropOutcome }
  | { readonly kind: 'deadLetter'; readonly code: string; readonly reason: string }
  | { readonly kind: 'retry'; readonly reason: string; readonly cause?: unknown }
  | { readonly kind: 'interrupted' };

/** The outcomes a dropped message is counted under (ingest_consumer_messages_total). */
export type DropOutcome = Exclude<MessageOutcome, 'ok' | 'dead_letter'>;

const OK: StageResult = Object.freeze({ kind: 'ok' });
const INTERRUPTED: StageResult = Object.freeze({ kind: 'interrupted' });

export const ok = (): StageResult => OK;
export const passOn = (message: OutgoingMessage): StageResult => ({ kind: 'passOn', message });
export const drop = (outcome: DropOutcome): StageResult => ({ kind: 'drop', outcome });
export const deadLetter = (code: string, reason: string): StageResult => ({ kind: 'deadLetter', code, reason });
export const retry = (reason: string, cause?: unknown): StageResult => ({ kind: 'retry', reason, cause });
export const interrupted = (): StageResult => INTERRUPTED;

/** A message's record, or why it can never be processed (its dead letter's code and reason). */
export type Decoded<T> = { ok: true; record: T } | { ok: false; code: string; reason: string };

/** One batch as the stage sees it; made by `StageOptions.open` for every batch. */
export interface StageBatch<T> {
  /** One decoded record to its result; may be async (awaited in order, one message at a time). */
  step(record: T, message: ConsumedMessage): StageResult | Promise<StageResult>;
  /**
   * Publishes the messages the steps passed on (called once per batch, also with none), before
   * the dead letters. Resolving means they are durable; a throw fails the batch (re-read).
   */
  publish?(passed: OutgoingMessage[]): Promise<void>;
  /** After outputs and dead letters are durable: the stage's remaining effects, and what to commit (default: the whole batch). */
  end?(done: { deadLettered: readonly DeadLetter[] }): Promise<BatchResult | void> | BatchResult | void;
  /** Awaited last, after the batch is counted: holds the partition while the stage's own queue is full. */
  backpressure?(): Promise<void>;
}

/** What every consumer is wired with (a consumer's own deps usually are one). */
export interface StageWiring {
  kafka: KafkaClient;
  groupId: string;
  logger: Logger;
  metrics: Registry;
  /** Where what cannot be processed goes (createDeadLetterSink: topic, `dlq-*` headers, counter). */
  deadLetters: DeadLetterSink;
}

export interface StageOptions<T> extends ConsumerTuning {
  /** The consumer's name (logs, component name). */
  name: string;
  /** The `consumer` label of the stage metrics. */
  stage: ConsumerStage;
  /** Outcomes this stage reports; their series start at zero. */
  outcomes: readonly MessageOutcome[];
  topics: string[];
  /** Pure: a message to the stage's record, or the reason it is a poison message. */
  decode(message: ConsumedMessage): Decoded<T>;
  /** Opens a batch (state per partition, a restore, a clock reading). `null`: the stage takes no batch now; nothing is done or committed. */
  open(messages: ConsumedMessage[], ctx: BatchContext): StageBatch<T> | null | Promise<StageBatch<T> | null>;
}

/** Passed through to the batch consumer. */
type ConsumerTuning = Pick<BatchConsumerOptions, 'partitionsConsumedConcurrently' | 'maxBytesPerPartition' | 'onGroupJoin' | 'beforeDisconnect' | 'recovery'>;

/** What became of one batch's messages, for the counters. */
interface Tally {
  ok: number;
  dropped: Map<DropOutcome, number>;
}

const UNCOMMITTED: BatchResult = Object.freeze({ commitOffset: null });

/** A batch consumer that runs `options` as a stage (see StageResult for what each result does). */
export function createStageConsumer<T>(wiring: StageWiring, options: StageOptions<T>): BatchConsumer {
  const metrics = createConsumerStageMetrics(wiring.metrics, options.stage, options.outcomes);

  async function handleBatch(messages: ConsumedMessage[], ctx: BatchContext): Promise<BatchResult | void> {
    const batch = await options.open(messages, ctx);
    if (batch === null) return UNCOMMITTED;
    const passed: OutgoingMessage[] = [];
    const letters: DeadLetter[] = [];
    const tally: Tally = { ok: 0, dropped: new Map() };

    for (const message of messages) {
      const decoded = options.decode(message);
      if (!decoded.ok) {
        letters.push({ message, code: decoded.code, reason: decoded.reason });
        continue;
      }
      let result = batch.step(decoded.record, message);
      // Synchronous steps (storage's hot path) cost no microtask per message.
      if (result instanceof Promise) result = await result;
      switch (result.kind) {
        case 'ok':
          tally.ok++;
          break;
        case 'passOn':
          passed.push(result.message);
          tally.ok++;
          break;
        case 'drop':
          tally.dropped.set(result.outcome, (tally.dropped.get(result.outcome) ?? 0) + 1);
          break;
        case 'deadLetter':
          letters.push({ message, code: result.code, reason: result.reason });
          break;
        case 'retry':
          throw new AppError('stage_retry', `${options.name}: ${result.reason}; the batch will be read again`, { retryable: true, cause: result.cause });
        case 'interrupted':
          return UNCOMMITTED;
      }
    }

    await batch.publish?.(passed);
    await wiring.deadLetters.publish(letters);
    const commit = await batch.end?.({ deadLettered: letters });
    metrics.handled('ok', tally.ok);
    for (const [outcome, n] of tally.dropped) metrics.handled(outcome, n);
    metrics.handled('dead_letter', letters.length);
    await batch.backpressure?.();
    return commit;
  }

  return createBatchConsumer(wiring.kafka, {
    name: options.name,
    groupId: wiring.groupId,
    topics: options.topics,
    logger: wiring.logger,
    partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
    maxBytesPerPartition: options.maxBytesPerPartition,
    onGroupJoin: options.onGroupJoin,
    beforeDisconnect: options.beforeDisconnect,
    recovery: options.recovery,
    handleBatch: metrics.instrument(handleBatch),
  });
}

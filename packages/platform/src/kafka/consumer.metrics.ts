import { METRIC_NAMES, type Registry, sharedCounter, sharedHistogram } from '../metrics.js';
import type { BatchHandler } from './consumer.js';

/**
 * The `consumer` label: one value per pipeline stage, the same words the dead-letter counter
 * uses. A bounded set, so every series can be created at zero up front.
 */
export const CONSUMER_STAGES = ['dedupe', 'storage', 'jobs', 'crm-sink'] as const;
export type ConsumerStage = (typeof CONSUMER_STAGES)[number];

/**
 * What became of a message once its batch's handler finished: passed on, stored, buffered or
 * handed over (`ok`), dropped as a repeat (`duplicate`), moved to a dead-letter topic
 * (`dead_letter`), dropped because its person or company was erased (`erased`,
 * docs/erasure.md). Delivery is at least once, so a batch delivered again after a crash or a
 * rebalance is counted again: this is work done, not unique messages.
 */
export const MESSAGE_OUTCOMES = ['ok', 'duplicate', 'dead_letter', 'erased'] as const;
export type MessageOutcome = (typeof MESSAGE_OUTCOMES)[number];

export interface ConsumerStageMetrics {
  /** Counts `n` messages of a batch, once the handler has done their work (not for a batch that throws). */
  handled(outcome: MessageOutcome, n?: number): void;
  /** Times every batch and counts the ones that throw (nothing of them is committed). */
  instrument(handler: BatchHandler): BatchHandler;
}

type StageLabels = 'consumer';

/**
 * RED metrics of one consumer stage, on series shared by all stages of a service:
 *   ingest_consumer_messages_total{consumer, outcome}   rate, by what became of each message
 *   ingest_consumer_batch_failures_total{consumer}      errors: batches that threw (re-delivered)
 *   ingest_consumer_batch_duration_seconds{consumer}    duration of handleBatch
 * `outcomes` are the ones this stage can report; they start at zero so rate() and the alerts
 * work from the first scrape.
 */
export function createConsumerStageMetrics(registry: Registry, consumer: ConsumerStage, outcomes: readonly MessageOutcome[]): ConsumerStageMetrics {
  const messages = sharedCounter(registry, {
    name: METRIC_NAMES.consumerMessages,
    help: 'Messages handled by a consumer stage, by outcome (ok, duplicate, dead_letter); re-deliveries count again',
    labelNames: ['consumer', 'outcome'],
  });
  const failures = sharedCounter(registry, {
    name: METRIC_NAMES.consumerBatchFailures,
    help: 'Batches whose handler threw (infrastructure failure); nothing of them is committed and they are delivered again',
    labelNames: ['consumer'],
  });
  const duration = sharedHistogram<StageLabels>(registry, {
    name: METRIC_NAMES.consumerBatchDuration,
    help: 'Seconds to handle one fetched batch of one partition, failed batches included',
    labelNames: ['consumer'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  });

  for (const outcome of outcomes) messages.inc({ consumer, outcome }, 0);
  failures.inc({ consumer }, 0);
  duration.zero({ consumer });

  return {
    handled(outcome, n = 1) {
      if (n > 0) messages.inc({ consumer, outcome }, n);
    },
    instrument(handler) {
      return async (batch, ctx) => {
        const end = duration.startTimer({ consumer });
        try {
          return await handler(batch, ctx);
        } catch (err) {
          failures.inc({ consumer });
          throw err;
        } finally {
          end();
        }
      };
    },
  };
}

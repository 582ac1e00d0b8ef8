import { AppError, errorMessage } from '../errors.js';

/**
 * The wrapper's errors. Whatever the library threw is kept as `cause`; callers classify by
 * `code` and `retryable` only:
 * - `kafka_unavailable`: no broker answered in time, or the connection broke (retryable).
 * - `kafka_rebalance`: the group moved on (rebalance, fenced member); the work is read again
 *   by whoever owns the partition now (retryable).
 * - `kafka_send_expired`: a send waited in the queue past its deadline and was dropped before
 *   it reached the network: nothing of it was written (retryable).
 * - `kafka_producer_full`: the producer already holds its bound of queued bytes; nothing was
 *   queued (retryable).
 * - `kafka_error`: anything else the broker or library refused (`retryable` as the library says).
 */
export type KafkaErrorCode = 'kafka_unavailable' | 'kafka_rebalance' | 'kafka_send_expired' | 'kafka_producer_full' | 'kafka_error';

export class KafkaError extends AppError {
  declare readonly code: KafkaErrorCode;

  constructor(code: KafkaErrorCode, message: string, options: { retryable: boolean; cause?: unknown }) {
    super(code, message, options);
    this.name = 'KafkaError';
  }
}

/** How a driver reads its library's errors. */
export interface ErrorTraits {
  /** The library says retrying can help. */
  retryable: boolean;
  /** Connection refused/closed or a request timeout. */
  unavailable: boolean;
  /** The member's generation is stale, or it is unknown to the coordinator. */
  rebalance: boolean;
}

/** Wraps a library error once; a `KafkaError` passes through unchanged. */
export function toKafkaError(what: string, err: unknown, traits: (err: unknown) => ErrorTraits): KafkaError {
  if (err instanceof KafkaError) return err;
  const t = traits(err);
  const code: KafkaErrorCode = t.rebalance ? 'kafka_rebalance' : t.unavailable ? 'kafka_unavailable' : 'kafka_error';
  return new KafkaError(code, `${what}: ${errorMessage(err)}`, { retryable: t.retryable || t.unavailable || t.rebalance, cause: err });
}

/** Runs a library call and wraps what it throws. */
export async function wrapErrors<T>(what: string, traits: (err: unknown) => ErrorTraits, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toKafkaError(what, err, traits);
  }
}

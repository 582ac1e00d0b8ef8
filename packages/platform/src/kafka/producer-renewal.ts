import { errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { DriverProducer } from './driver.js';
import { KafkaError } from './errors.js';

/**
 * The driver producer the wrapper sends on, and its replacement after a failed send.
 *
 * Why replace it: an idempotent producer numbers the records of each partition, and the broker
 * accepts a batch only when its first number follows the last one it wrote. Both libraries
 * advance their numbers only when a send is acknowledged. A send that failed on our side (a
 * request timeout while the broker was stalled, a connection that broke with the request on it)
 * may still have been written on the broker's side, and then every later send on that producer
 * is refused with OUT_OF_ORDER_SEQUENCE_NUMBER, for ever: the gateway answered 500 to every
 * request after a 45 s broker pause until it was restarted. Worse, a later batch with the same
 * first number and count as the written one would be taken for its retry and acknowledged
 * without being written. The Java client takes a new epoch or producer id in that case
 * (KIP-360, KIP-890); neither library here does, so after *any* failed send the wrapper closes
 * the producer and continues on a new instance, which fetches a new producer id
 * (InitProducerId) when it connects and numbers from 0. A failure that never reached a broker
 * costs one needless InitProducerId; a missed one costs data.
 *
 * The replacement runs in the background with a backoff until it connects, so readiness comes
 * back without traffic (a not-ready gateway gets none from its load balancer). Sends made
 * meanwhile wait for it a bounded time, then fail unwritten (`kafka_unavailable`).
 */
export interface ProducerRenewal {
  /** Connects the first producer (its producer id is fetched here: a broker that is down fails the start). */
  connect(): Promise<void>;
  /** Stops any replacement under way and closes the producer. */
  disconnect(): Promise<void>;
  /**
   * The producer to send on. While a replacement is under way, waits for it at most `waitMs`,
   * then rejects with `kafka_unavailable`: nothing was sent.
   */
  acquire(waitMs: number): Promise<DriverProducer>;
  /** A send on `producer` failed: it is not used again, and a new one is made in the background. */
  retire(producer: DriverProducer, reason: string): void;
  /** A send succeeded: the producer works. */
  succeeded(): void;
  /** Since when no producer could send (a failed send not yet followed by a success or a replacement), or undefined. */
  failingSince(): number | undefined;
}

export interface ProducerRenewalOptions {
  /** Makes a new, unconnected driver producer. */
  make(): DriverProducer;
  logger?: Logger;
  /** A replacement connected, after a failed send of this reason (the failure's code). */
  onRenewed?(reason: string): void;
  /** One connect attempt of a replacement is abandoned after this long (a stalled broker may never answer it). */
  attemptTimeoutMs: number;
  /** Backoff between attempts, doubling from the first to the last. */
  backoffMs?: { initial: number; max: number };
  now?: () => number;
}

export function createProducerRenewal(options: ProducerRenewalOptions): ProducerRenewal {
  const now = options.now ?? Date.now;
  const backoff = options.backoffMs ?? { initial: 250, max: 5_000 };
  let current: DriverProducer | undefined = options.make();
  let renewing: Promise<void> | undefined;
  let failing: number | undefined;
  let closed = false;

  async function closeQuietly(producer: DriverProducer, what: string): Promise<void> {
    // Bounded: a library that waits for a stalled broker must not hold the replacement up.
    const timer = new Promise<void>((resolve) => setTimeout(resolve, options.attemptTimeoutMs).unref());
    await Promise.race([
      producer.disconnect().catch((err: unknown) => options.logger?.debug({ err }, `kafka producer: closing the ${what} one failed`)),
      timer,
    ]);
  }

  async function renew(reason: string): Promise<void> {
    for (let attempt = 0, delay = backoff.initial; !closed; attempt++, delay = Math.min(delay * 2, backoff.max)) {
      const candidate = options.make();
      try {
        if ((await settledWithin(candidate.connect(), options.attemptTimeoutMs)) === 'late') {
          throw new KafkaError('kafka_unavailable', `connecting a new producer took longer than ${options.attemptTimeoutMs} ms`, { retryable: true });
        }
        if (closed) {
          await closeQuietly(candidate, 'new');
          return;
        }
        current = candidate;
        failing = undefined;
        options.logger?.warn({ reason, attempts: attempt + 1 }, 'kafka producer replaced after a failed send: sending again under a new producer id');
        options.onRenewed?.(reason);
        return;
      } catch (err) {
        void closeQuietly(candidate, 'new');
        options.logger?.warn({ reason, attempt: attempt + 1, err: errorMessage(err) }, 'kafka producer: a new producer could not connect yet; trying again');
        await new Promise((resolve) => setTimeout(resolve, delay).unref());
      }
    }
  }

  return {
    async connect() {
      current ??= options.make();
      await current.connect();
    },
    async disconnect() {
      closed = true;
      const last = current;
      current = undefined;
      if (last) await last.disconnect();
    },
    async acquire(waitMs) {
      if (current) return current;
      const waited = await Promise.race([
        (renewing ?? Promise.resolve()).then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), waitMs).unref()),
      ]);
      if (waited && current) return current;
      throw new KafkaError(
        'kafka_unavailable',
        closed ? 'the producer is closed; nothing was written' : `no Kafka producer could connect within ${waitMs} ms of a failed send; nothing was written`,
        { retryable: !closed },
      );
    },
    retire(producer, reason) {
      failing ??= now();
      if (producer !== current) return;
      current = undefined;
      void closeQuietly(producer, 'failed');
      renewing = renew(reason).finally(() => {
        renewing = undefined;
      });
    },
    succeeded() {
      failing = undefined;
    },
    failingSince: () => failing,
  };
}

/** 'done' once `work` resolved (rethrows what it rejects with), 'late' if it has not within `ms`. */
export async function settledWithin(work: Promise<void>, ms: number): Promise<'done' | 'late'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work.then(() => 'done' as const), new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

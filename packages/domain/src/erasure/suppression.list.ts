import { randomBytes } from 'node:crypto';
import {
  AppError,
  type Component,
  CONTROL_PLANE_GROUP_PREFIX,
  createBatchConsumer,
  createEndOffsetsReader,
  createOffsetTracker,
  errorMessage,
  type KafkaClient,
  type Logger,
} from '@ingest/platform';
import { decodeSuppression, type IdentifiedEvent, identifierHash, identifiersOf } from './erasure-record.js';

/**
 * The erasure suppression list as one process holds it: every (account, identifier hash) of
 * `control.erasures`, read from the beginning and followed. The storage writer, the crm-sink
 * and the dead-letter replay ask it before they store, sync or replay an event.
 */
export interface SuppressionSet {
  /** A record of the topic; `value` null is a tombstone (the suppression is lifted). */
  apply(key: string | null, value: Buffer | string | null): void;
  /** True when the event names an erased email or domain of its account. */
  suppressed(event: IdentifiedEvent): boolean;
  readonly size: number;
}

export function createSuppressionSet(): SuppressionSet {
  // accountId -> hashes: an account without erasures (nearly all of them) costs no hashing.
  const byAccount = new Map<string, Set<string>>();
  let size = 0;
  return {
    apply(key, value) {
      const record = decodeSuppression(value);
      if (record) {
        let hashes = byAccount.get(record.accountId);
        if (!hashes) byAccount.set(record.accountId, (hashes = new Set()));
        if (!hashes.has(record.identifierHash)) size++;
        hashes.add(record.identifierHash);
        return;
      }
      if (value !== null || key === null) return;
      // Tombstone: <accountId>/<type>/<hash>; the account id may itself hold a slash.
      const parts = key.split('/');
      const hash = parts.pop();
      parts.pop();
      const hashes = byAccount.get(parts.join('/'));
      if (hash && hashes?.delete(hash)) size--;
    },
    suppressed(event) {
      const hashes = byAccount.get(event.accountId);
      if (!hashes) return false;
      return identifiersOf(event).some(({ type, value }) => hashes.has(identifierHash(event.accountId, type, value)));
    },
    get size() {
      return size;
    },
  };
}

export interface SuppressionList extends Component, Pick<SuppressionSet, 'suppressed'> {
  /**
   * Resolves once this list holds every suppression Kafka had acknowledged when the call was
   * made (it reads the topic's end offsets after the call and waits to have applied them).
   * Concurrent callers share one round. Rejects (retryable) when that takes longer than
   * `syncTimeoutMs`: the caller must not go on as if it knew the list.
   */
  sync(): Promise<void>;
  readonly size: number;
}

export interface SuppressionListDeps {
  kafka: KafkaClient;
  /** `control.erasures` with the deployment's prefix. */
  topic: string;
  logger: Logger;
  syncTimeoutMs?: number;
}

export function createSuppressionList(deps: SuppressionListDeps): SuppressionList {
  const set = createSuppressionSet();
  const tracker = createOffsetTracker();
  const endOffsets = createEndOffsetsReader(deps.kafka);
  const syncTimeoutMs = deps.syncTimeoutMs ?? 15_000;
  const log = deps.logger.child({ component: 'suppression-list' });
  let running = false;
  let caughtUp = false;
  // The group prefix every role may use for its control-plane readers; nothing is committed.
  const consumer = createBatchConsumer(deps.kafka, {
    name: 'suppression-list-consumer',
    groupId: `${CONTROL_PLANE_GROUP_PREFIX}erasures.${randomBytes(6).toString('hex')}`,
    topics: [deps.topic],
    fromBeginning: true,
    commitOffsets: false,
    maxWaitTimeMs: 100,
    logger: deps.logger,
    handleBatch: async (messages) => {
      for (const m of messages) set.apply(m.key === null ? null : m.key.toString(), m.value);
      const last = messages.at(-1);
      if (last) tracker.advance(last.topic, last.partition, BigInt(last.offset) + 1n);
    },
  });

  async function round(): Promise<void> {
    if (!running) throw new AppError('suppression_list_not_started', 'the erasure suppression list is not running', { retryable: true });
    let targets;
    try {
      targets = await endOffsets.endOffsets([deps.topic]);
    } catch (err) {
      throw new AppError('kafka_unavailable', `the erasure suppression list could not read its end offsets: ${errorMessage(err)}`, {
        retryable: true,
        cause: err,
      });
    }
    if (!(await tracker.waitFor(targets, syncTimeoutMs))) {
      throw new AppError('suppression_list_timeout', `the erasure suppression list did not catch up within ${syncTimeoutMs} ms`, { retryable: true });
    }
  }

  // A round whose end offsets may have been read before a caller arrived cannot answer that
  // caller: it waits for the next round, which every caller arriving meanwhile shares.
  let current: Promise<void> | undefined;
  let next: Promise<void> | undefined;
  function sync(): Promise<void> {
    if (!current) {
      current = round().finally(() => {
        current = undefined;
      });
      return current;
    }
    next ??= current
      .catch(() => undefined)
      .then(() => {
        next = undefined;
        return sync();
      });
    return next;
  }

  return {
    name: 'suppression-list',
    async start() {
      await endOffsets.connect();
      await consumer.start();
      running = true;
      await sync();
      caughtUp = true;
      log.info({ suppressions: set.size }, 'erasure suppression list caught up');
    },
    async stop() {
      running = false;
      tracker.cancelAll(new AppError('suppression_list_stopped', 'the erasure suppression list stopped', { retryable: true }));
      const results = await Promise.allSettled([consumer.stop(), endOffsets.disconnect()]);
      for (const r of results) if (r.status === 'rejected') log.warn({ err: r.reason }, 'suppression list stop: a client failed to close');
    },
    healthy: () => running && caughtUp && consumer.healthy(),
    alive: () => consumer.alive(),
    sync,
    suppressed: (event) => set.suppressed(event),
    get size() {
      return set.size;
    },
  };
}

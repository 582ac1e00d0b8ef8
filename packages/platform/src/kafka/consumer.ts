import { errorMessage, isRetryable } from '../errors.js';
import { KafkaError } from './errors.js';
import type { Component } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import type { ConsumedMessage, DriverConsumer, KafkaClient } from './driver.js';

export type { ConsumedMessage } from './driver.js';

export interface BatchContext {
  topic: string;
  partition: number;
  /** Call during long work (retries) so the group does not evict this member. */
  heartbeat(): Promise<void>;
  /** False once the consumer is stopping or lost the partition: finish without side effects. */
  shouldContinue(): boolean;
}

/**
 * What a handler may say about the commit of its batch. `commitOffset` is the next offset to
 * read after a restart: a string commits exactly that offset (it may be lower than the end of
 * the batch, e.g. to keep a not yet finished multi-message unit re-readable), `null` commits
 * nothing for this batch, and leaving it out commits the offset after the batch.
 */
export interface BatchResult {
  commitOffset?: string | null;
}

/**
 * Handles one fetched batch of one partition. Resolving means every effect of every message is
 * durable, and the consumer then commits the offset after the batch (or the one the handler
 * returned, see BatchResult). Throwing means nothing of the batch is committed: the consumer
 * starts a new membership and the batch is delivered again.
 * Bad data must not throw (dead-letter it instead); throwing is for infrastructure failures.
 */
export type BatchHandler = (messages: ConsumedMessage[], ctx: BatchContext) => Promise<void | BatchResult>;

export interface BatchConsumerOptions {
  name: string;
  groupId: string;
  topics: string[];
  handleBatch: BatchHandler;
  logger: Logger;
  fromBeginning?: boolean;
  /** Partitions handled in parallel by this member. */
  partitionsConsumedConcurrently?: number;
  sessionTimeoutMs?: number;
  maxBytesPerPartition?: number;
  /** How long the broker may hold a fetch waiting for data; bounds idle latency. */
  maxWaitTimeMs?: number;
  /**
   * Default true. False for members that keep no position between runs (each control plane
   * instance re-reads its compacted topics from the beginning under a group of its own): no
   * committed offsets are left behind for groups that never come back.
   */
  commitOffsets?: boolean;
  /** Told each time this member (re)joins its group: after a start, a rebalance or a restart. */
  onGroupJoin?: () => void;
  /**
   * Awaited by stop() after the last batch handler returned and before the consumer leaves the
   * group: a handler that finishes its work later (commitOffset: null) commits it here.
   */
  beforeDisconnect?: () => Promise<void>;
  /** How restarts after a crash are paced and when the consumer counts as dead (defaults below). */
  recovery?: Partial<RecoveryOptions>;
}

export interface RecoveryOptions {
  /** First wait before a new membership after a crash; doubles up to `maxBackoffMs`. */
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** How long start() retries retryable failures before it fails (default max(60 s, 2 x session timeout)). */
  startTimeoutMs: number;
  /** Bound on leaving a broken membership (a stalled broker may never answer the LeaveGroup). */
  leaveTimeoutMs: number;
  /** A running session without any sign of life (and no batch being handled) this long is ended and replaced. */
  stallTimeoutMs: number;
  /**
   * Without a running membership for this long, the consumer reports itself dead (`alive()`
   * false), so the service's liveness fails and an orchestrator restarts the process. It keeps
   * trying meanwhile.
   */
  deadAfterMs: number;
}

const DEFAULT_RECOVERY: Omit<RecoveryOptions, 'deadAfterMs' | 'stallTimeoutMs' | 'startTimeoutMs'> = {
  initialBackoffMs: 500,
  maxBackoffMs: 10_000,
  leaveTimeoutMs: 10_000,
};

export interface BatchConsumer extends Component {
  /** Partitions currently assigned to this member, per topic. */
  assignments(): Record<string, number[]>;
  /**
   * Commits `offset` (the next one to read) outside a batch, for handlers that finish work after
   * their batch returned (they return `commitOffset: null`). Resolves only once the broker took
   * it. Rejects with a retryable `kafka_rebalance` when the partition is not assigned to this
   * member, the consumer has no running membership, or the group moved on (the messages are
   * then read again by the partition's owner). Does nothing when `commitOffsets` is false.
   */
  commit(topic: string, partition: number, offset: string): Promise<void>;
  /**
   * The same for several partitions in one OffsetCommit request. The partitions this member
   * holds are committed; if any are not, it then rejects (`kafka_rebalance`) naming them.
   */
  commitMany(offsets: readonly { topic: string; partition: number; offset: string }[]): Promise<void>;
  /**
   * Leaves the group and joins again, so reading resumes at the committed offsets: for handlers
   * whose later work failed after their batch returned. Never rejects: a failed rejoin is retried
   * like a crash. Does nothing once stop() was called.
   */
  restart(reason: string): Promise<void>;
  /** False once the consumer has been unable to run for `deadAfterMs`: only a process restart helps. */
  alive(): boolean;
}

/**
 * A consumer group member that hands batches to `handleBatch`, commits what the handler says,
 * and survives whatever happens to its membership: a crash of the library's session (broker
 * gone or stalled past the session timeout, member fenced, handler threw) ends that session and
 * a fresh one starts after a backoff, from the committed offsets, with no one calling restart.
 * A consumer that cannot get a session running for `deadAfterMs` says so through `alive()`.
 */
export function createBatchConsumer(kafka: KafkaClient, options: BatchConsumerOptions): BatchConsumer {
  const log = options.logger.child({ component: options.name, groupId: options.groupId });
  const recovery = { ...DEFAULT_RECOVERY, ...options.recovery };
  // Read when used, not at creation: assembling a service (and its tests) touches no client.
  const deadAfterMs = () => recovery.deadAfterMs ?? kafka.consumerDefaults.deadAfterMs;
  const sessionTimeoutMs = () => options.sessionTimeoutMs ?? kafka.consumerDefaults.sessionTimeoutMs;
  let session: DriverConsumer | undefined;
  let running = false;
  let stopping = false;
  let stopRequested = false;
  /** Since when no session runs (undefined while one does, and before the first start). */
  let downSince: number | undefined;
  /** Set when recovery itself failed: nothing restarts the consumer any more. */
  let dead = false;
  let assigned: Record<string, number[]> = {};
  // Batches being handled. Leaving lets them finish and commit first: kafkajs silently skips
  // commits once its own stop has begun, which would re-deliver work that is already done.
  const inFlight = new Set<Promise<unknown>>();
  let recovering: Promise<void> | undefined;
  /** The current session crashed (also while it was starting, when a recovery was under way). */
  let currentCrashed = false;
  /** Last sign of life of the session (a fetch, a heartbeat, a batch): the watchdog's input. */
  let lastActivity = Date.now();
  let watchdog: NodeJS.Timeout | undefined;
  const stallTimeoutMs = () => recovery.stallTimeoutMs ?? Math.max(60_000, 2 * sessionTimeoutMs());
  // A join may wait for a dead member's session to expire before the group lets anyone in.
  const startTimeoutMs = () => recovery.startTimeoutMs ?? Math.max(60_000, 2 * sessionTimeoutMs());

  /**
   * A session that stopped fetching without telling (no crash, no handler running) is ended like
   * a crashed one: seen with kafkajs after a broker restart, and the cheapest guard against any
   * other library hang.
   */
  function watch(): void {
    clearInterval(watchdog);
    watchdog = setInterval(() => {
      if (!running || stopping || inFlight.size > 0 || recovering) return;
      const idleMs = Date.now() - lastActivity;
      if (idleMs > stallTimeoutMs()) {
        log.error({ idleMs }, 'consumer session stalled (no fetch, heartbeat or batch); starting a new one');
        void recover('stalled');
      }
    }, 1_000);
    watchdog.unref();
  }

  function newSession(): DriverConsumer {
    const current: DriverConsumer = kafka.consumer({
      groupId: options.groupId,
      topics: options.topics,
      fromBeginning: options.fromBeginning ?? true,
      sessionTimeoutMs: sessionTimeoutMs(),
      heartbeatIntervalMs: Math.min(3_000, Math.floor(sessionTimeoutMs() / 3)),
      maxBytesPerPartition: options.maxBytesPerPartition ?? 4 * 1024 * 1024,
      maxWaitTimeMs: options.maxWaitTimeMs ?? 250,
      partitionsConsumedConcurrently: options.partitionsConsumedConcurrently ?? 1,
      logger: log,
      onJoin(assignment) {
        if (session !== current) return;
        assigned = assignment;
        log.info({ assignment }, 'joined consumer group');
        options.onGroupJoin?.();
      },
      onCrash(error) {
        if (session !== current || stopRequested) return;
        currentCrashed = true;
        log.error({ err: error }, 'consumer session crashed; starting a new one from the committed offsets');
        void recover('crash');
      },
      handleBatch: async (batch) => {
        // Stopping: nothing new is started (and nothing committed, so nothing is skipped either).
        if (stopping || session !== current) return;
        lastActivity = Date.now();
        const handled = options.handleBatch(batch.messages, {
          topic: batch.topic,
          partition: batch.partition,
          heartbeat: batch.heartbeat,
          shouldContinue: () => !stopping && session === current && batch.isCurrent(),
        });
        inFlight.add(handled);
        try {
          const result = await handled;
          // The partition moved during the batch: its new owner re-reads it.
          if (!batch.isCurrent() || options.commitOffsets === false || session !== current) return;
          const last = batch.messages.at(-1)?.offset ?? '0';
          const offset = result?.commitOffset === undefined ? (BigInt(last) + 1n).toString() : result.commitOffset;
          if (offset === null) return;
          await current.commit([{ topic: batch.topic, partition: batch.partition, offset }]);
        } catch (err) {
          // Never thrown into the library: kafkajs retries a failed batch in place and, after a
          // broker restart, was seen to stop fetching for good instead. A fresh membership
          // re-reads the batch from the committed offset, the same way for every driver.
          if (session !== current || stopRequested) return;
          // A commit refused because the group moved on: whoever owns the partition now reads the
          // batch again, and the library rejoins by itself. A new membership of our own would
          // only start another rebalance, and with it more refused commits.
          if (err instanceof KafkaError && err.code === 'kafka_rebalance') {
            log.warn({ topic: batch.topic, partition: batch.partition }, 'offset commit refused after a rebalance; the batch will be read again');
            return;
          }
          log.error({ err, topic: batch.topic, partition: batch.partition }, 'batch failed; starting a new membership from the committed offsets');
          void recover('batch failed');
        } finally {
          inFlight.delete(handled);
          lastActivity = Date.now();
        }
      },
      onActivity() {
        if (session === current) lastActivity = Date.now();
      },
    });
    return current;
  }

  async function startSession(): Promise<void> {
    stopping = false;
    assigned = {};
    currentCrashed = false;
    session = newSession();
    lastActivity = Date.now();
    await session.start();
    if (currentCrashed) throw new Error('the consumer session crashed while starting');
    running = true;
    downSince = undefined;
    lastActivity = Date.now();
    watch();
  }

  async function leave(): Promise<void> {
    stopping = true;
    downSince ??= Date.now();
    // Handlers see shouldContinue() === false (retry loops give up, uncommitted); a batch that
    // completes still commits because the session is still there, and so does beforeDisconnect.
    await Promise.allSettled([...inFlight]);
    await options.beforeDisconnect?.().catch((err: unknown) => log.warn({ err }, 'work left unfinished at stop; it will be read again'));
    running = false;
    const ending = session;
    if (!ending) return;
    const left = await bounded(ending.stop(), recovery.leaveTimeoutMs).catch((err: unknown) => {
      log.warn({ err }, 'leaving the consumer group failed; the broker drops the member after its session timeout');
      return true;
    });
    if (!left) log.warn({ leaveTimeoutMs: recovery.leaveTimeoutMs }, 'leaving the consumer group did not finish in time; going on without it');
  }

  /** Leaves the current session and starts new ones until one runs (or stop() is called). Never rejects. */
  function recover(reason: string): Promise<void> {
    recovering ??= (async () => {
      try {
        await leave();
        let backoff = recovery.initialBackoffMs;
        while (!stopRequested) {
          await new Promise((r) => setTimeout(r, backoff));
          if (stopRequested) break;
          try {
            await startSession();
            log.warn({ reason }, 'consumer running again');
            return;
          } catch (err) {
            log.error({ err, reason, downForMs: Date.now() - (downSince ?? Date.now()) }, 'consumer could not start again; retrying');
            await leave();
            backoff = Math.min(backoff * 2, recovery.maxBackoffMs);
          }
        }
      } catch (err) {
        // Nothing above should throw; if it does, the consumer is dead until the process restarts.
        dead = true;
        log.fatal({ err, detail: errorMessage(err) }, 'consumer recovery failed; only a process restart brings it back');
      }
    })().finally(() => {
      recovering = undefined;
      // A crash reported while this recovery was finishing found it still under way.
      if (currentCrashed && !stopRequested) void recover('crash');
    });
    return recovering;
  }

  /**
   * Commits only what this member holds now, and says so when it left anything out: a caller
   * told "done" for a commit that never reached the broker believed its messages were committed
   * while the partition's new owner was already reading them again (the rebalance contract test
   * counted them as handed over after a commit).
   */
  async function commitMany(offsets: readonly { topic: string; partition: number; offset: string }[]): Promise<void> {
    if (options.commitOffsets === false || offsets.length === 0) return;
    const current = session;
    if (!running || !current) throw new KafkaError('kafka_rebalance', 'offset commit refused: the consumer has no running membership', { retryable: true });
    const held = (o: { topic: string; partition: number }) => (assigned[o.topic] ?? []).includes(o.partition);
    const mine = offsets.filter(held);
    const notHeld = offsets.filter((o) => !held(o));
    if (mine.length > 0) await current.commit(mine);
    if (notHeld.length > 0) {
      const which = notHeld.map((o) => `${o.topic}/${o.partition}`).join(', ');
      throw new KafkaError('kafka_rebalance', `offset commit refused for partitions this member no longer holds: ${which}`, { retryable: true });
    }
  }

  return {
    name: options.name,
    async start() {
      stopRequested = false;
      // A broker that is still electing a coordinator right after its start answers with
      // retryable errors for a moment: retried here for a while before the start fails.
      const deadline = Date.now() + startTimeoutMs();
      for (let backoff = recovery.initialBackoffMs; ; backoff = Math.min(backoff * 2, recovery.maxBackoffMs)) {
        try {
          await startSession();
          return;
        } catch (err) {
          running = false;
          await bounded(session?.stop() ?? Promise.resolve(), recovery.leaveTimeoutMs).catch(() => {});
          if (!isRetryable(err) || stopRequested || Date.now() + backoff > deadline) throw err;
          log.warn({ err, retryInMs: backoff }, 'consumer could not start; retrying');
          await new Promise((r) => setTimeout(r, backoff));
        }
      }
    },
    async stop() {
      stopRequested = true;
      clearInterval(watchdog);
      await recovering;
      await leave();
    },
    restart(reason) {
      if (stopRequested) return Promise.resolve();
      log.warn({ reason }, 'restarting the consumer to read again from the committed offsets');
      return recover(reason);
    },
    healthy: () => running && !stopping,
    alive: () => stopRequested || (!dead && (downSince === undefined || Date.now() - downSince < deadAfterMs())),
    assignments: () => assigned,
    commit(topic, partition, offset) {
      return commitMany([{ topic, partition, offset }]);
    },
    commitMany,
  };
}

/** Resolves true when `work` settles within `ms`, false otherwise; rejects with its error. */
async function bounded(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([work.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

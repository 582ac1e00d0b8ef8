import { type BaseOptions, Consumer, kGetApi, type Message, type MessagesStream } from '@platformatic/kafka';
import type { ConsumedMessage, DriverConsumer, DriverConsumerOptions } from '../driver.js';
import { KafkaError, wrapErrors } from '../errors.js';
import { platformaticTraits } from './platformatic.client.js';
import { completeMetadataAnswers } from './platformatic.metadata.js';

/**
 * One membership through @platformatic/kafka's message stream. The stream prefetches up to its
 * high-water mark; everything it has buffered is read at once, split into one batch per
 * partition, and handled (up to `partitionsConsumedConcurrently` partitions at a time) before
 * the next read, so a partition's batches are handled in order, one at a time.
 *
 * A rejoin (rebalance, or the member was fenced after a stall) makes the stream read every
 * partition again from its committed offset, while what it fetched before may still arrive: per
 * partition, messages below the next offset this member has not handled yet are dropped, and
 * those of partitions it no longer holds are not handed over.
 *
 * A rejoin gives partitions up only after the batches being handled and their commits finished
 * (revoke, wait, commit, rejoin): the JoinGroup request waits for them, bounded by half the
 * session timeout, and no new batch starts meanwhile. Their commits then land under the old
 * generation before anyone is given the partitions; one that comes later is refused by the
 * broker or by the checks below, never sent for a partition another member may be reading.
 *
 * The library's own retries are off for the consumer (`retries: 0`): after a failed commit it
 * rejoins and commits again under the new generation, which would commit a partition another
 * member may already be reading. A failure instead ends the session and the wrapper starts a
 * fresh one from the committed offsets (and retries a failed start).
 */
export function createPlatformaticConsumer(base: BaseOptions, options: DriverConsumerOptions): DriverConsumer {
  const log = options.logger;
  const rebalanceTimeoutMs = Math.max(options.sessionTimeoutMs, 30_000);
  const consumer = completeMetadataAnswers(
    new Consumer({
      ...base,
      // A JoinGroup is answered only once the group's rebalance is over, which waits for a member
      // that died (SIGKILL) until its session expires: as the Java client does, the request may
      // take the rebalance timeout and then some. With the library's 10 s, a processor started
      // next to a killed one timed out joining and exited.
      requestTimeout: Math.max(base.requestTimeout ?? 0, rebalanceTimeoutMs + 5_000),
      retries: 0,
      groupId: options.groupId,
      autocommit: false,
      sessionTimeout: options.sessionTimeoutMs,
      rebalanceTimeout: rebalanceTimeoutMs,
      heartbeatInterval: options.heartbeatIntervalMs,
      maxWaitTime: options.maxWaitTimeMs,
      maxBytesPerPartition: options.maxBytesPerPartition,
      maxBytes: options.maxBytesPerPartition * Math.max(1, options.partitionsConsumedConcurrently) * 2,
      minBytes: 1,
    }),
  );
  let stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  let stopped = false;
  let crashed = false;

  const crash = (error: unknown) => {
    if (stopped || crashed) return;
    crashed = true;
    wakeJoinWaiters();
    options.onCrash(error);
  };
  /** Per partition, the next offset not handled yet in this session. */
  const positions = new Map<string, bigint>();
  const keyOf = (topic: string, partition: number) => `${topic}\u0000${partition}`;
  /**
   * The generation whose assignment this member holds. The library takes a new generation id
   * as soon as its JoinGroup is answered and the new assignment only when SyncGroup is: in
   * between, the old assignment is stale although the generation is current, and a commit made
   * then succeeded for a partition the other member was already reading (the rebalance contract
   * test caught it). Nothing is handed over or committed while the two differ.
   */
  let syncedGeneration = -1;
  const inSync = () => syncedGeneration === consumer.generationId;
  /** Set from the moment the library wants to rejoin until the join is over: no batch starts. */
  let revoking = false;
  /** Batches being handled (their commits included): a rejoin waits for them. */
  const handling = new Set<Promise<void>>();
  let joinWaiters: (() => void)[] = [];
  const wakeJoinWaiters = () => {
    const waiters = joinWaiters;
    joinWaiters = [];
    for (const w of waiters) w();
  };
  consumer.on('consumer:group:join', (payload) => {
    syncedGeneration = payload.generationId ?? consumer.generationId;
    revoking = false;
    wakeJoinWaiters();
    const assignment: Record<string, number[]> = {};
    for (const a of payload.assignments ?? []) assignment[a.topic] = [...a.partitions];
    // A partition that left and comes back later starts from its commit, not from here.
    for (const key of positions.keys()) {
      const [topic = '', partition = '-1'] = key.split('\u0000');
      if (!(assignment[topic] ?? []).includes(Number(partition))) positions.delete(key);
    }
    options.onJoin(assignment);
  });
  consumer.on('consumer:heartbeat:end', () => options.onActivity());
  // A rejoin that failed for good: the member has no group any more.
  consumer.on('error' as 'consumer:heartbeat:error', (error: unknown) => crash(error));

  /**
   * The library reads the generation id when it builds the OffsetCommit request, after its own
   * asynchronous steps (coordinator, metadata): a rejoin answered in between sent our commit
   * under the new generation, for a partition the other member was already reading. The request
   * is checked against the generation the commit was made for, and dropped when they differ.
   * Commits go one at a time so that one generation is pinned at a time.
   */
  let commitGeneration: number | undefined;
  let commits: Promise<unknown> = Promise.resolve();
  const getApi = consumer[kGetApi].bind(consumer) as (name: string, callback: (error: Error | null, api?: unknown) => void) => void;
  (consumer as unknown as Record<symbol, unknown>)[kGetApi] = (name: string, callback: (error: Error | null, api?: unknown) => void) =>
    getApi(name, (error, api) => {
      if (error || typeof api !== 'function') {
        callback(error, api);
        return;
      }
      if (name === 'JoinGroup') {
        callback(null, (...args: unknown[]) => {
          revoking = true;
          const send = () => (api as (...a: unknown[]) => void)(...args);
          revoked().then(send, send);
        });
        return;
      }
      if (name !== 'OffsetCommit') {
        callback(null, api);
        return;
      }
      callback(null, (...args: unknown[]) => {
        const done = args.at(-1) as (error: Error | null) => void;
        if (commitGeneration !== undefined && args[2] !== commitGeneration) done(STALE_COMMIT);
        else (api as (...a: unknown[]) => void)(...args);
      });
    });

  /**
   * Resolves once the batches being handled and the commits queued so far have settled, or after
   * half the session timeout (the member sends no heartbeat while it waits, and the broker drops
   * one that is silent for the session timeout): whatever finishes later commits nothing.
   */
  async function revoked(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, options.sessionTimeoutMs / 2)));
    const started = Date.now();
    try {
      await Promise.race([
        bound,
        (async () => {
          while (handling.size > 0) await Promise.allSettled([...handling]);
          await commits;
        })(),
      ]);
    } finally {
      clearTimeout(timer);
    }
    if (handling.size > 0)
      log.warn({ batches: handling.size, waitedMs: Date.now() - started }, 'rejoining with batches still being handled; their commits will be refused');
  }

  const assigned = (topic: string, partition: number) => consumer.assignments?.some((a) => a.topic === topic && a.partitions.includes(partition)) ?? false;

  let pumping = false;
  async function pump(): Promise<void> {
    if (pumping || !stream) return;
    pumping = true;
    try {
      for (;;) {
        const fetched: Message<Buffer, Buffer, Buffer, Buffer>[] = [];
        for (let m = stream.read() as Message<Buffer, Buffer, Buffer, Buffer> | null; m !== null; m = stream.read() as typeof m) fetched.push(m);
        if (fetched.length === 0 || stopped || crashed) return;
        await handle(fetched);
      }
    } finally {
      pumping = false;
    }
  }

  /** Waits until no rejoin is under way (or the session is over). */
  async function joined(): Promise<void> {
    while ((revoking || !inSync()) && !stopped && !crashed) await new Promise<void>((resolve) => joinWaiters.push(resolve));
  }

  async function handle(fetched: Message<Buffer, Buffer, Buffer, Buffer>[]): Promise<void> {
    // Mid-rejoin: wait for the new assignment, then hand over what is still ours. Not dropped:
    // a fetch in flight during the rejoin may still land after it, continuing from these
    // messages, and would leave a gap behind them.
    await joined();
    if (stopped || crashed) return;
    const byPartition = new Map<string, ConsumedMessage[]>();
    // A fetch comes as runs of one partition's messages: its key, floor, assignment and list
    // are looked up once a run, not once a message (the per-message key string, map look-ups
    // and assignment scan were 2 % of the processor's thread in the bench's profile).
    let runTopic = '';
    let runPartition = -1;
    let runKey = '';
    let floor = -1n;
    let ours = false;
    let list: ConsumedMessage[] | undefined;
    for (const m of fetched) {
      if (m.partition !== runPartition || m.topic !== runTopic) {
        runTopic = m.topic;
        runPartition = m.partition;
        runKey = keyOf(m.topic, m.partition);
        floor = positions.get(runKey) ?? -1n;
        ours = assigned(m.topic, m.partition);
        list = byPartition.get(runKey);
      }
      // Handled already (read again from the commit after a rejoin), or not ours any more.
      if (!ours || m.offset < floor) continue;
      if (!list) {
        list = [];
        byPartition.set(runKey, list);
      }
      list.push(toConsumed(m));
    }
    const batches = [...byPartition.values()];
    const workers = Math.max(1, Math.min(options.partitionsConsumedConcurrently, batches.length));
    await Promise.all(
      Array.from({ length: workers }, async () => {
        for (let messages = batches.shift(); messages; messages = batches.shift()) {
          const first = messages[0] as ConsumedMessage;
          // A rejoin began since the fetch: the batch waits for its outcome, and is handled only
          // if the partition is still ours (skipping it could leave a gap behind a later fetch).
          await joined();
          const generation = consumer.generationId;
          const isCurrent = () => !stopped && !crashed && inSync() && consumer.generationId === generation && assigned(first.topic, first.partition);
          if (!isCurrent()) continue;
          const handled = options.handleBatch({ topic: first.topic, partition: first.partition, messages, heartbeat: async () => {}, isCurrent });
          handling.add(handled);
          try {
            await handled;
          } finally {
            handling.delete(handled);
          }
          positions.set(keyOf(first.topic, first.partition), BigInt((messages.at(-1) as ConsumedMessage).offset) + 1n);
        }
      }),
    );
  }

  return {
    start: () =>
      wrapErrors('kafka consumer start', platformaticTraits, async () => {
        const opened = await consumer.consume({
          topics: [...options.topics],
          mode: 'committed',
          fallbackMode: options.fromBeginning ? 'earliest' : 'latest',
          autocommit: false,
          highWaterMark: 4_096,
        });
        stream = opened;
        opened.on('fetch', () => options.onActivity());
        opened.on('readable', () => {
          pump().catch((error: unknown) => crash(error));
        });
        opened.on('error', (error) => crash(error));
        opened.on('close', () => {
          if (!stopped) crash(new KafkaError('kafka_unavailable', 'the message stream closed', { retryable: true }));
        });
      }),
    commit(offsets) {
      // The generation of the assignment the caller saw: a commit that waited behind another
      // one while a rejoin completed would otherwise go out under the new generation, which the
      // broker accepts, for a partition that may now be another member's.
      const generation = inSync() ? syncedGeneration : undefined;
      const commit = commits.then(() =>
        wrapErrors('kafka offset commit', platformaticTraits, async () => {
          if (stopped || crashed) throw new KafkaError('kafka_rebalance', 'the consumer session ended before the commit', { retryable: true });
          // Under the generation whose assignment this member held when the commit was made,
          // for partitions it still holds, or not at all: a refused commit only means its
          // messages may be read again (at least once).
          if (generation === undefined || !inSync() || syncedGeneration !== generation) {
            throw new KafkaError('kafka_rebalance', 'offset commit refused: the member rejoined its group since', { retryable: true });
          }
          const lost = offsets.filter((o) => !assigned(o.topic, o.partition));
          if (lost.length > 0) {
            throw new KafkaError(
              'kafka_rebalance',
              `offset commit refused: not assigned to this member: ${lost.map((o) => `${o.topic}/${o.partition}`).join(', ')}`,
              { retryable: true },
            );
          }
          commitGeneration = generation;
          try {
            await consumer.commit({ offsets: offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: BigInt(o.offset), leaderEpoch: -1 })) });
          } catch (err) {
            if (err === STALE_COMMIT) throw new KafkaError('kafka_rebalance', STALE_COMMIT.message, { retryable: true });
            throw err;
          } finally {
            commitGeneration = undefined;
          }
        }),
      );
      commits = commit.catch(() => {});
      return commit;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      wakeJoinWaiters();
      // The stream first: the library's close leaves it running when the member has no id any
      // more (fenced after a broker stall) or no active membership, then clears the consumer's
      // topics, and the stream's next fetch read the metadata of a topic no longer asked for and
      // threw from a callback (the processor, and in one run the crm-sink, exited in the
      // broker-pause chaos test).
      stream?.destroy();
      await wrapErrors('kafka consumer stop', platformaticTraits, async () => {
        // Force: closes the streams, leaves the group, closes the connections.
        await forceClose(consumer).catch((err: unknown) => {
          log.debug({ err }, 'leaving the group failed; closing anyway');
          return forceClose(consumer);
        });
      });
    },
  };
}

function toConsumed(m: Message<Buffer, Buffer, Buffer, Buffer>): ConsumedMessage {
  const headers: Record<string, string> = {};
  for (const [k, v] of m.headers) headers[k.toString('utf8')] = v?.toString('utf8') ?? '';
  return {
    topic: m.topic,
    partition: m.partition,
    offset: m.offset.toString(),
    key: m.key ?? null,
    value: m.value ?? null,
    headers,
    timestamp: Number(m.timestamp),
  };
}

/** Closes the stream, leaves the group and closes the connections. */
function forceClose(consumer: Consumer): Promise<void> {
  return new Promise((resolve, reject) => consumer.close(true, (err) => (err ? reject(err) : resolve())));
}

/** A commit built under another generation than the one it was made for: dropped, not sent. */
const STALE_COMMIT = new Error('offset commit dropped: the member rejoined the group meanwhile');

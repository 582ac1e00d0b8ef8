import type { ClickHouseWriter, WriteContext } from './clickhouse.writer.js';

/**
 * Gathers the rows of many partitions' batches into one ClickHouse insert, bounded by size and
 * time (ClickHouse wants few, large inserts: at most a couple per second per table). Each
 * caller's promise resolves only when the insert holding its rows succeeded, so a consumer
 * commits its offsets after its rows are durable and never before.
 */
export interface InsertBatcher {
  add(rows: readonly string[], ctx: WriteContext): Promise<void>;
  /** Rows added whose insert has not finished yet (waiting or running). */
  readonly queuedRows: number;
  /** Resolves once fewer than `limit` rows are queued: backpressure for callers that do not await add(). */
  waitForRoom(limit: number): Promise<void>;
  /** Sends what is gathered now and resolves when every insert started so far has finished. */
  drain(): Promise<void>;
}

interface Waiter {
  ctx: WriteContext;
  resolve(): void;
  reject(err: unknown): void;
}

interface PendingBatch {
  rows: string[];
  waiters: Waiter[];
}

export interface InsertBatcherOptions {
  writer: ClickHouseWriter;
  /** An insert starts once this many rows wait... */
  maxRows: number;
  /** ...or once the oldest waiting row has waited this long. */
  maxWaitMs: number;
  /**
   * ...but never sooner than this after the previous insert started (ClickHouse merges parts in
   * the background and wants at most a couple of inserts per second per table). Rows arriving
   * meanwhile join the insert, so under a backlog inserts grow instead of multiplying.
   */
  minIntervalMs?: number;
  now?: () => number;
}

export function createInsertBatcher(options: InsertBatcherOptions): InsertBatcher {
  const minIntervalMs = options.minIntervalMs ?? 0;
  const now = options.now ?? Date.now;
  let pending: PendingBatch = { rows: [], waiters: [] };
  let timer: NodeJS.Timeout | undefined;
  let flushRequested = false;
  let lastStartMs = Number.NEGATIVE_INFINITY;
  // One insert at a time: while it runs, the next batch fills up.
  let flushing: Promise<void> = Promise.resolve();
  let queuedRows = 0;
  const roomWaiters: { limit: number; resolve(): void }[] = [];

  function released(count: number): void {
    queuedRows -= count;
    for (let i = roomWaiters.length - 1; i >= 0; i--) {
      const waiter = roomWaiters[i] as (typeof roomWaiters)[number];
      if (queuedRows < waiter.limit) {
        roomWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  /** Queues the next insert; it takes whatever is pending when it starts. */
  function flushSoon(): void {
    if (flushRequested) return;
    flushRequested = true;
    flushing = flushing.then(takeAndInsert);
  }

  async function takeAndInsert(): Promise<void> {
    const wait = lastStartMs + minIntervalMs - now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    flushRequested = false;
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = { rows: [], waiters: [] };
    if (batch.waiters.length === 0) return;
    lastStartMs = now();
    await insert(batch);
  }

  async function insert(batch: PendingBatch): Promise<void> {
    // The consumer is one group member: any waiting handler's heartbeat keeps it alive, and the
    // insert keeps retrying while at least one of them may still commit.
    const ctx: WriteContext = {
      heartbeat: async () => {
        await batch.waiters[0]?.ctx.heartbeat();
      },
      shouldContinue: () => batch.waiters.some((w) => w.ctx.shouldContinue()),
    };
    try {
      await options.writer.write(batch.rows, ctx);
      for (const w of batch.waiters) w.resolve();
    } catch (err) {
      for (const w of batch.waiters) w.reject(err);
    } finally {
      released(batch.rows.length);
    }
  }

  return {
    add(rows, ctx) {
      return new Promise<void>((resolve, reject) => {
        queuedRows += rows.length;
        for (const row of rows) pending.rows.push(row);
        pending.waiters.push({ ctx, resolve, reject });
        if (pending.rows.length >= options.maxRows) flushSoon();
        else timer ??= setTimeout(flushSoon, options.maxWaitMs);
      });
    },
    get queuedRows() {
      return queuedRows;
    },
    waitForRoom(limit) {
      if (queuedRows < limit) return Promise.resolve();
      return new Promise<void>((resolve) => roomWaiters.push({ limit, resolve }));
    },
    async drain() {
      flushSoon();
      await flushing;
    },
  };
}

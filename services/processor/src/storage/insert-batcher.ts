import type { ClickHouseWriter, WriteContext } from './clickhouse.writer.js';

/**
 * Gathers the rows of many partitions' batches into one ClickHouse insert, bounded by size and
 * time (ClickHouse wants few, large inserts: at most a couple per second per table). Each
 * caller's promise resolves only when the insert holding its rows succeeded, so a consumer
 * commits its offsets after its rows are durable and never before.
 */
export interface InsertBatcher {
  add(rows: readonly Record<string, unknown>[], ctx: WriteContext): Promise<void>;
}

interface Waiter {
  ctx: WriteContext;
  resolve(): void;
  reject(err: unknown): void;
}

interface PendingBatch {
  rows: Record<string, unknown>[];
  waiters: Waiter[];
}

export function createInsertBatcher(options: { writer: ClickHouseWriter; maxRows: number; maxWaitMs: number }): InsertBatcher {
  let pending: PendingBatch = { rows: [], waiters: [] };
  let timer: NodeJS.Timeout | undefined;
  // One insert at a time: while it runs, the next batch fills up.
  let flushing: Promise<void> = Promise.resolve();

  function flushSoon(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = pending;
    pending = { rows: [], waiters: [] };
    if (batch.waiters.length === 0) return;
    flushing = flushing.then(() => insert(batch));
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
    }
  }

  return {
    add(rows, ctx) {
      return new Promise<void>((resolve, reject) => {
        pending.rows.push(...rows);
        pending.waiters.push({ ctx, resolve, reject });
        if (pending.rows.length >= options.maxRows) flushSoon();
        else timer ??= setTimeout(flushSoon, options.maxWaitMs);
      });
    },
  };
}

import { describe, expect, it, vi } from 'vitest';
import type { ClickHouseWriter, WriteContext } from './clickhouse.writer.js';
import { createInsertBatcher } from './insert-batcher.js';

const ctx = (continues = true): WriteContext => ({ heartbeat: async () => undefined, shouldContinue: () => continues });

function recordingWriter(fail?: Error) {
  const inserts: number[] = [];
  let active = 0;
  let maxActive = 0;
  const writer: ClickHouseWriter = {
    async write(rows) {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((r) => setTimeout(r, 5));
      active--;
      if (fail) throw fail;
      inserts.push(rows.length);
    },
  };
  return { writer, inserts, maxActive: () => maxActive };
}

const rows = (n: number) => Array.from({ length: n }, (_, i) => `line-${i}`);

describe('insert batcher', () => {
  it('gathers several callers into one insert after the wait, and resolves them all after it', async () => {
    const w = recordingWriter();
    const batcher = createInsertBatcher({ writer: w.writer, maxRows: 1_000, maxWaitMs: 20 });
    const done: string[] = [];
    await Promise.all([batcher.add(rows(3), ctx()).then(() => done.push('a')), batcher.add(rows(4), ctx()).then(() => done.push('b'))]);
    expect(w.inserts).toEqual([7]);
    expect(done.sort()).toEqual(['a', 'b']);
  });

  it('inserts at once when the size bound is reached, one insert at a time, taking what waits when it starts', async () => {
    const w = recordingWriter();
    const batcher = createInsertBatcher({ writer: w.writer, maxRows: 10, maxWaitMs: 10_000 });
    const first = [batcher.add(rows(6), ctx()), batcher.add(rows(6), ctx()), batcher.add(rows(10), ctx())];
    await new Promise((r) => setTimeout(r, 1)); // the first insert (22 rows) is running
    await Promise.all([...first, batcher.add(rows(10), ctx())]);
    expect(w.inserts).toEqual([22, 10]);
    expect(w.maxActive()).toBe(1);
  });

  it('starts inserts at least minIntervalMs apart; rows arriving meanwhile join the next insert', async () => {
    vi.useFakeTimers();
    try {
      const starts: number[] = [];
      const sizes: number[] = [];
      const writer: ClickHouseWriter = {
        async write(written) {
          starts.push(Date.now());
          sizes.push(written.length);
        },
      };
      const batcher = createInsertBatcher({ writer, maxRows: 10, maxWaitMs: 1_000, minIntervalMs: 500 });
      const a = batcher.add(rows(10), ctx()); // full: starts at once
      await vi.advanceTimersByTimeAsync(0);
      const b = batcher.add(rows(10), ctx()); // full too, but within 500 ms of the first
      await vi.advanceTimersByTimeAsync(100);
      const c = batcher.add(rows(5), ctx()); // joins b's insert
      await vi.advanceTimersByTimeAsync(500);
      await Promise.all([a, b, c]);
      expect(sizes).toEqual([10, 15]);
      expect((starts[1] ?? 0) - (starts[0] ?? 0)).toBeGreaterThanOrEqual(500);
    } finally {
      vi.useRealTimers();
    }
  });

  it('rejects every caller of a failed insert, so none of them commits', async () => {
    const w = recordingWriter(new Error('insert failed'));
    const batcher = createInsertBatcher({ writer: w.writer, maxRows: 2, maxWaitMs: 10 });
    const results = await Promise.allSettled([batcher.add(rows(1), ctx()), batcher.add(rows(1), ctx())]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('keeps retrying while any caller may still commit', async () => {
    let seen: WriteContext | undefined;
    const batcher = createInsertBatcher({
      writer: {
        async write(_rows, c) {
          seen = c;
        },
      },
      maxRows: 2,
      maxWaitMs: 10,
    });
    await Promise.all([batcher.add(rows(1), ctx(false)), batcher.add(rows(1), ctx(true))]);
    expect(seen?.shouldContinue()).toBe(true);
  });

  it('counts queued rows until their insert finished, and lets callers wait for room', async () => {
    const w = recordingWriter();
    const batcher = createInsertBatcher({ writer: w.writer, maxRows: 10, maxWaitMs: 10_000 });
    const first = batcher.add(rows(10), ctx());
    await new Promise((r) => setTimeout(r, 1)); // its insert has taken the first 10
    const second = batcher.add(rows(6), ctx());
    expect(batcher.queuedRows).toBe(16);
    let roomAt = -1;
    const room = batcher.waitForRoom(10).then(() => (roomAt = batcher.queuedRows));
    await first;
    await room;
    expect(roomAt).toBe(6);
    await batcher.drain();
    await second;
    expect(batcher.queuedRows).toBe(0);
    expect(w.inserts).toEqual([10, 6]);
  });

  it('drain sends what is gathered at once and waits for it', async () => {
    const w = recordingWriter();
    const batcher = createInsertBatcher({ writer: w.writer, maxRows: 1_000, maxWaitMs: 60_000 });
    const added = batcher.add(rows(3), ctx());
    await batcher.drain();
    expect(w.inserts).toEqual([3]);
    await expect(added).resolves.toBeUndefined();
    await expect(batcher.waitForRoom(1)).resolves.toBeUndefined();
  });
});

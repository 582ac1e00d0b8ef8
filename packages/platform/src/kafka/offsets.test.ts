import { describe, expect, it } from 'vitest';
import type { PartitionRange } from './driver.js';
import { createOffsetTracker } from './offsets.js';

const range = (partition: number, low: number, high: number): PartitionRange => ({ topic: 't', partition, low: BigInt(low), high: BigInt(high) });

describe('offset tracker', () => {
  it('treats empty partitions as reached and others only once consumed up to their end', () => {
    const tracker = createOffsetTracker();
    expect(tracker.reached([range(0, 0, 0), range(1, 5, 5)])).toBe(true);
    expect(tracker.reached([range(0, 0, 3)])).toBe(false);
    tracker.advance('t', 0, 2n);
    expect(tracker.reached([range(0, 0, 3)])).toBe(false);
    tracker.advance('t', 0, 3n);
    expect(tracker.reached([range(0, 0, 3)])).toBe(true);
    expect(tracker.reached([range(0, 0, 3), range(1, 0, 1)])).toBe(false);
  });

  it('never moves a position backwards', () => {
    const tracker = createOffsetTracker();
    tracker.advance('t', 0, 10n);
    tracker.advance('t', 0, 4n);
    expect(tracker.position('t', 0)).toBe(10n);
    expect(tracker.position('t', 1)).toBeUndefined();
  });

  it('wakes a waiter once the targets are reached', async () => {
    const tracker = createOffsetTracker();
    const waiting = tracker.waitFor([range(0, 0, 2)], 10_000);
    tracker.advance('t', 0, 1n);
    tracker.advance('t', 0, 2n);
    await expect(waiting).resolves.toBe(true);
  });

  it('resolves false at the deadline', async () => {
    const tracker = createOffsetTracker();
    await expect(tracker.waitFor([range(0, 0, 2)], 20)).resolves.toBe(false);
  });

  it('rejects pending waiters when cancelled', async () => {
    const tracker = createOffsetTracker();
    const waiting = tracker.waitFor([range(0, 0, 2)], 10_000);
    tracker.cancelAll(new Error('stopped'));
    await expect(waiting).rejects.toThrow('stopped');
  });
});

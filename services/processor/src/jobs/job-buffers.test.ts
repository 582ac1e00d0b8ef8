import type { JobChunk } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { PartitionJobs } from './job-buffers.js';

const TIMEOUT = 10_000;

function chunk(jobId: string, seq: number, items = 1): JobChunk {
  return {
    v: 1,
    jobId,
    accountId: 'acc_1',
    source: 'bulk',
    type: 'chunk',
    seq,
    receivedAtMs: 0,
    items: Array.from({ length: items }, (_, i) => ({ index: seq * 500 + i, event: { eventName: `e${seq}` } })),
  };
}

describe('PartitionJobs', () => {
  it('keeps the commit at the first chunk of the oldest unfinished job', () => {
    const state = new PartitionJobs(TIMEOUT);
    expect(state.commitOffset()).toBeUndefined();
    state.addChunk(3n, 1_000, chunk('a', 0));
    state.addChunk(4n, 1_000, chunk('b', 0));
    state.addChunk(5n, 1_000, chunk('a', 1));
    state.endBatch(6n, 1_000);
    expect(state.commitOffset()).toBe(3n);

    state.remove('a');
    expect(state.commitOffset()).toBe(4n);
    state.remove('b');
    expect(state.commitOffset()).toBe(6n);
  });

  it('keeps the first copy of a repeated seq and the lowest offset', () => {
    const state = new PartitionJobs(TIMEOUT);
    state.addChunk(7n, 1_000, chunk('a', 0, 2));
    state.addChunk(5n, 1_000, chunk('a', 0, 3));
    const job = state.get('a');
    expect(job?.chunks.size).toBe(1);
    expect(job?.chunks.get(0)?.items).toHaveLength(2);
    expect(job?.firstOffset).toBe(5n);
  });

  it('continues only a batch that starts where the last one ended', () => {
    const state = new PartitionJobs(TIMEOUT);
    expect(state.continuesAt(42n)).toBe(true);
    state.addChunk(42n, 1_000, chunk('a', 0));
    state.endBatch(43n, 1_000);
    expect(state.continuesAt(43n)).toBe(true);
    // Re-read from the committed offset after a restart, or moved on by another member.
    expect(state.continuesAt(42n)).toBe(false);
    expect(state.continuesAt(50n)).toBe(false);
  });

  it('abandons a job whose newest chunk is older than the timeout, by message time', () => {
    const state = new PartitionJobs(TIMEOUT);
    state.addChunk(0n, 1_000, chunk('slow', 0));
    state.addChunk(1n, 5_000, chunk('slow', 1));
    state.addChunk(2n, 6_000, chunk('other', 0));
    expect(state.overdue(15_000)).toEqual([]); // 10 s after the newest chunk of `slow`: not more
    const abandoned = state.overdue(15_001);
    expect(abandoned.map((j) => j.jobId)).toEqual(['slow']);
    // Still held (and holding the commit back) until given up.
    expect(state.overdue(15_001).map((j) => j.jobId)).toEqual(['slow']);
    expect(state.commitOffset()).toBe(0n);
    state.remove('slow');
    expect(state.get('other')).toBeDefined();
    expect(state.overdue(16_001).map((j) => j.jobId)).toEqual(['other']);
  });

  it('moves its clock only when a batch ends', () => {
    const state = new PartitionJobs(TIMEOUT);
    expect(state.newestMs).toBe(Number.NEGATIVE_INFINITY);
    state.endBatch(1n, 9_000);
    state.endBatch(2n, 4_000); // an older producer timestamp never moves the clock back
    expect(state.newestMs).toBe(9_000);
  });
});

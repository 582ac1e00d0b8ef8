import type { JobChunk } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { JobBufferBudget, PartitionJobs } from './job-buffers.js';

const TIMEOUT = 10_000;

function chunk(jobId: string, seq: number, items = 1, accountId = 'acc_1'): JobChunk {
  return {
    v: 1,
    jobId,
    accountId,
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
    expect(state.expire(15_000)).toEqual([]); // 10 s after the newest chunk of `slow`: not more
    const abandoned = state.expire(15_001);
    expect(abandoned.map((j) => j.jobId)).toEqual(['slow']);
    expect(state.get('slow')).toBeUndefined();
    expect(state.abandonedReason('slow')).toBe('idle');
    // A late chunk of an abandoned job is not kept again.
    state.addChunk(3n, 15_002, chunk('slow', 2));
    expect(state.get('slow')).toBeUndefined();
    expect(state.get('other')).toBeDefined();
    expect(state.expire(16_001).map((j) => j.jobId)).toEqual(['other']);
  });

  it('moves its clock only when a batch ends', () => {
    const state = new PartitionJobs(TIMEOUT);
    expect(state.newestMs).toBe(Number.NEGATIVE_INFINITY);
    state.endBatch(1n, 9_000);
    state.endBatch(2n, 4_000); // an older producer timestamp never moves the clock back
    expect(state.newestMs).toBe(9_000);
  });
});

describe('PartitionJobs byte caps', () => {
  it('gives up the job idle the longest when the partition cap is reached, never the one receiving', () => {
    const state = new PartitionJobs({ sealTimeoutMs: TIMEOUT, maxBytes: 300 });
    state.addChunk(0n, 1_000, chunk('stalled-1', 0), 100);
    state.addChunk(1n, 2_000, chunk('stalled-2', 0), 100);
    state.addChunk(2n, 3_000, chunk('live', 0), 100);
    expect(state.bytes).toBe(300);
    const evicted = state.addChunk(3n, 4_000, chunk('live', 1), 100);
    expect(evicted.map((e) => [e.job.jobId, e.reason])).toEqual([['stalled-1', 'buffer_full']]);
    expect(state.bytes).toBe(300);
    expect(state.get('live')?.chunks.size).toBe(2);
    expect(state.abandonedReason('stalled-1')).toBe('buffer_full');
    // The commit no longer waits for the given-up job.
    state.endBatch(4n, 4_000);
    expect(state.commitOffset()).toBe(1n);
  });

  it('gives up the receiving job itself when nothing else can make room', () => {
    const state = new PartitionJobs({ sealTimeoutMs: TIMEOUT, maxBytes: 250 });
    state.addChunk(0n, 1_000, chunk('big', 0), 200);
    const evicted = state.addChunk(1n, 2_000, chunk('big', 1), 100);
    expect(evicted.map((e) => e.job.jobId)).toEqual(['big']);
    expect(state.bytes).toBe(0);
    expect(state.get('big')).toBeUndefined();
    expect(state.addChunk(2n, 3_000, chunk('big', 2), 10)).toEqual([]);
    expect(state.get('big')).toBeUndefined();
    // A job too large from its first chunk is reported too (it never held anything).
    const first = state.addChunk(3n, 3_000, chunk('huge', 0), 1_000);
    expect(first.map((e) => [e.job.jobId, e.job.bytes])).toEqual([['huge', 0]]);
  });

  it('shares one budget across partitions and gives up the idlest job of any of them, never a running one', () => {
    const budget = new JobBufferBudget(300);
    const a = new PartitionJobs({ sealTimeoutMs: TIMEOUT, maxBytes: 1_000, budget });
    const b = new PartitionJobs({ sealTimeoutMs: TIMEOUT, maxBytes: 1_000, budget });
    a.addChunk(0n, 1_000, chunk('a-running', 0), 100);
    a.addChunk(1n, 2_000, chunk('a-stalled', 0), 100);
    b.addChunk(0n, 3_000, chunk('b-live', 0), 100);
    a.setRunning('a-running', true);
    const evicted = b.addChunk(1n, 4_000, chunk('b-live', 1), 100);
    expect(evicted.map((e) => e.job.jobId)).toEqual(['a-stalled']);
    expect(budget.used).toBe(300);
    expect(a.get('a-running')).toBeDefined();
    // Finished and forgotten partitions give their bytes back.
    a.remove('a-running');
    expect(budget.used).toBe(200);
    b.release();
    expect(budget.used).toBe(0);
  });

  it("makes the account holding the most pay first: a light tenant's older job stays", () => {
    const budget = new JobBufferBudget(500);
    const a = new PartitionJobs({ sealTimeoutMs: TIMEOUT, maxBytes: 1_000, budget });
    const b = new PartitionJobs({ sealTimeoutMs: TIMEOUT, maxBytes: 1_000, budget });
    a.addChunk(0n, 1_000, chunk('light-job', 0, 1, 'acc_light'), 100);
    b.addChunk(0n, 2_000, chunk('heavy-1', 0, 1, 'acc_heavy'), 200);
    b.addChunk(1n, 3_000, chunk('heavy-2', 0, 1, 'acc_heavy'), 200);
    // A chunk of the light tenant needs room: the heavy tenant's idlest job goes, not the light one's older job.
    const evicted = a.addChunk(1n, 4_000, chunk('light-job', 1, 1, 'acc_light'), 100);
    expect(evicted.map((e) => e.job.jobId)).toEqual(['heavy-1']);
    expect(a.get('light-job')?.chunks.size).toBe(2);
    // The heavy tenant pays for its own new job with its idle ones...
    b.addChunk(2n, 5_000, chunk('heavy-3', 0, 1, 'acc_heavy'), 100);
    const own = b.addChunk(3n, 6_000, chunk('heavy-4', 0, 1, 'acc_heavy'), 300);
    expect(own.map((e) => e.job.jobId)).toEqual(['heavy-2', 'heavy-3']);
    expect(budget.used).toBe(500);
    // ...and with the new job itself once it has nothing else to give.
    const last = b.addChunk(4n, 7_000, chunk('heavy-5', 0, 1, 'acc_heavy'), 200);
    expect(last.map((e) => e.job.jobId)).toEqual(['heavy-4']);
    expect(a.get('light-job')?.chunks.size).toBe(2);
    expect(budget.used).toBe(400);
  });

  it('does not count a redelivered chunk twice', () => {
    const state = new PartitionJobs({ sealTimeoutMs: TIMEOUT, maxBytes: 1_000 });
    state.addChunk(0n, 1_000, chunk('a', 0), 100);
    state.addChunk(0n, 1_000, chunk('a', 0), 100);
    expect(state.bytes).toBe(100);
  });
});

import type { JobChunk, JobSealed, JobStatus } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { baseStatus, checkComplete, completedStatus, failedStatus, isFinal, processingStatus } from './job-status.transitions.js';

const sealed: JobSealed = {
  v: 1,
  jobId: 'job-1',
  accountId: 'acc_1',
  source: 'csv',
  type: 'sealed',
  chunks: 2,
  totalEvents: 3,
  receivedAtMs: Date.UTC(2026, 0, 1),
};

function chunk(seq: number, items: number, over: Partial<JobChunk> = {}): JobChunk {
  return {
    v: 1,
    jobId: 'job-1',
    accountId: 'acc_1',
    source: 'csv',
    type: 'chunk',
    seq,
    receivedAtMs: 0,
    items: Array.from({ length: items }, (_, index) => ({ index, event: {} })),
    ...over,
  };
}

const counts = { processed: 3, accepted: 1, rejected: 1, duplicates: 1, errors: [{ index: 1, row: 3, code: 'x', message: 'y' }] };

describe('job status transitions', () => {
  it('builds a queued status from the seal when the gateway wrote none', () => {
    expect(baseStatus(undefined, sealed)).toEqual({
      jobId: 'job-1',
      accountId: 'acc_1',
      source: 'csv',
      status: 'queued',
      totalEvents: 3,
      processed: 0,
      accepted: 0,
      rejected: 0,
      duplicates: 0,
      errors: [],
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
      startedAt: null,
      completedAt: null,
    });
  });

  it('keeps the stored createdAt and totalEvents and replaces stale counts', () => {
    const stale: JobStatus = {
      ...baseStatus(undefined, sealed),
      status: 'processing',
      createdAt: '2025-12-31T23:59:00.000Z',
      processed: 2,
      accepted: 2,
      startedAt: '2026-01-01T00:00:01.000Z',
    };
    const base = baseStatus(stale, sealed);
    const fresh = processingStatus(
      base,
      { processed: 0, accepted: 0, rejected: 0, duplicates: 0, errors: [] },
      '2026-01-01T00:00:01.000Z',
      '2026-01-01T00:01:00.000Z',
    );
    expect(fresh).toMatchObject({ status: 'processing', createdAt: '2025-12-31T23:59:00.000Z', totalEvents: 3, processed: 0, accepted: 0 });
    const done = completedStatus(base, counts, '2026-01-01T00:00:01.000Z', '2026-01-01T00:02:00.000Z');
    expect(done).toMatchObject({ status: 'completed', ...counts, completedAt: '2026-01-01T00:02:00.000Z', updatedAt: '2026-01-01T00:02:00.000Z' });
    expect(isFinal(done)).toBe(true);
    expect(isFinal(fresh)).toBe(false);
    expect(isFinal(undefined)).toBe(false);
  });

  it('fails with a reason and zero counts', () => {
    const failed = failedStatus(baseStatus(undefined, sealed), 'received 1 of 2 chunks', '2026-01-01T00:03:00.000Z');
    expect(failed).toMatchObject({ status: 'failed', failureReason: 'received 1 of 2 chunks', processed: 0, completedAt: '2026-01-01T00:03:00.000Z' });
    expect(isFinal(failed)).toBe(true);
  });
});

describe('checkComplete', () => {
  it('orders the chunks by seq when all are there', () => {
    const result = checkComplete(
      sealed,
      new Map([
        [1, chunk(1, 1)],
        [0, chunk(0, 2)],
      ]),
      3,
    );
    expect(result.ok && result.chunks.map((c) => c.seq)).toEqual([0, 1]);
  });

  it.each([
    ['a chunk is missing', new Map([[0, chunk(0, 3)]]), 3, /received 1 of 2 chunks/],
    [
      'a seq is out of range',
      new Map([
        [0, chunk(0, 2)],
        [2, chunk(2, 1)],
      ]),
      3,
      /chunk 1 of 2 is missing/,
    ],
    [
      'a chunk is of another account',
      new Map([
        [0, chunk(0, 2)],
        [1, chunk(1, 1, { accountId: 'acc_2' })],
      ]),
      3,
      /another account/,
    ],
    [
      'the events do not add up',
      new Map([
        [0, chunk(0, 2)],
        [1, chunk(1, 2)],
      ]),
      3,
      /hold 4 events, the job announced 3/,
    ],
  ])('fails when %s', (_name, chunks, total, reason) => {
    const result = checkComplete(sealed, chunks, total);
    expect(result).toEqual({ ok: false, reason: expect.stringMatching(reason) });
  });
});

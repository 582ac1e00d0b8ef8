/**
 * Real servers: Kafka and Redis. Jobs of a suspended account (issue 17): a job sealed after the
 * suspension never runs (failed, `account_suspended`, nothing written, its reservation settled
 * at zero by the processor's onJobFinished); a job running when the suspension lands stops
 * before its next chunk, with the counts of what it wrote.
 */
import type { JobChunkItem, JobStatus } from '@ingest/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRunnerFixture, type JobRunnerFixture } from './job.runner.fixture.js';
import { ACCOUNT_SUSPENDED_REASON } from './job.executor.js';

let fx: JobRunnerFixture;

beforeAll(async () => {
  fx = await createJobRunnerFixture();
});

afterAll(async () => {
  await fx?.close();
});

const isFinished = (s: JobStatus) => s.status === 'completed' || s.status === 'failed';
const items = (n: number): JobChunkItem[] =>
  Array.from({ length: n }, (_, i) => ({ index: i, event: { eventName: 'Suspended Test', email: `u${i}@example.com`, eventId: `ev-${i}` } }));

describe('job runner: suspended accounts', () => {
  it('fails a job of a suspended account without writing an event, and settles it as accepting nothing', async () => {
    const account = fx.account();
    const finished: JobStatus[] = [];
    const queued = await fx.writer.writeWhole(account, 'bulk', items(20));
    const { runner } = await fx.startRunner({
      accountSuspended: (id) => id === account.id,
      onJobFinished: async (status) => {
        finished.push(status);
      },
    });
    try {
      const status = await fx.waitForStatus(queued.jobId, isFinished, 'the job of the suspended account finished');
      expect(status).toMatchObject({ status: 'failed', failureReason: ACCOUNT_SUSPENDED_REASON, accepted: 0, processed: 0 });
      expect(await fx.rawRecords(queued.jobId)).toHaveLength(0);
      // processor.ts settles a job that did not complete at zero accepted events.
      expect(finished.find((s) => s.jobId === queued.jobId)).toMatchObject({ status: 'failed', accepted: 0 });
    } finally {
      await runner.stop();
    }
  });

  it('stops a running job before its next chunk once the account is suspended', async () => {
    const account = fx.account();
    const queued = await fx.writer.writeWhole(account, 'bulk', items(1_200));
    // Asked at the seal, then before each chunk: the suspension lands after the first chunk.
    let asked = 0;
    const { runner } = await fx.startRunner({ accountSuspended: (id) => id === account.id && ++asked > 2 });
    try {
      const status = await fx.waitForStatus(queued.jobId, isFinished, 'the job stopped by the suspension');
      expect(status).toMatchObject({ status: 'failed', failureReason: ACCOUNT_SUSPENDED_REASON, processed: 500, accepted: 500 });
      expect(await fx.rawRecords(queued.jobId)).toHaveLength(500);
    } finally {
      await runner.stop();
    }
  });
});

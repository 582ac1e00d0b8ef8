/**
 * Real servers: Kafka and Redis. A job runner stopped in the middle of a job (its producer
 * hangs, then fails, as when Kafka goes away and the process is stopped) leaves nothing
 * committed past the job; a new runner in the same group runs the job again from its first
 * chunk and ends with the same counts as a clean run. A job whose seal arrives after a
 * restart is completed from the buffers rebuilt by re-reading the partition.
 */
import type { JobChunkItem, JobMessage, JobStatus } from '@ingest/schemas';
import { AppError, committedOffsets, type Producer } from '@ingest/platform';
import { type JobStatusStore } from '@ingest/domain';
import { uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRunnerFixture, type JobRunnerFixture, RECEIVED_AT_MS } from './job.runner.fixture.js';

let fx: JobRunnerFixture;

beforeAll(async () => {
  fx = await createJobRunnerFixture();
});

afterAll(async () => {
  await fx?.close();
});

const isFinished = (s: JobStatus) => s.status === 'completed' || s.status === 'failed';
const countsOf = ({ processed, accepted, rejected, duplicates, errors, totalEvents, status }: JobStatus) => ({
  status,
  totalEvents,
  processed,
  accepted,
  rejected,
  duplicates,
  errors,
});

/** 2,000 events (4 chunks): 222 invalid, the last 100 repeating the ids of the first 100. */
function jobItems(): { items: JobChunkItem[]; acceptedIds: Set<string> } {
  const idOf = (i: number) => (i >= 1900 ? `c-${i - 1900}` : `c-${i}`);
  const invalid = (i: number) => i % 9 === 4;
  const items = Array.from({ length: 2000 }, (_, i) => ({
    index: i,
    event: { eventName: 'Crash Test', email: invalid(i) ? 'broken' : `u${i}@b.io`, eventId: idOf(i) },
  }));
  // The first valid event with an id is accepted: an invalid event does not take its id.
  const acceptedIds = new Set(items.filter((it) => !invalid(it.index)).map((it) => idOf(it.index)));
  return { items, acceptedIds };
}

/** Sends to `topic` go through until `allowed` of them were made; later ones hang until `fail()`, then reject. */
function hangingProducer(real: Producer, topic: string, allowed: number) {
  let sends = 0;
  let hanging = false;
  let fail: () => void = () => {};
  const failed = new Promise<never>((_, reject) => {
    fail = () => reject(new AppError('kafka_unavailable', 'kafka did not acknowledge (test)', { retryable: true }));
  });
  failed.catch(() => {});
  const producer: Producer = {
    ...real,
    async send(to, messages) {
      if (to === topic && ++sends > allowed) {
        hanging = true;
        await failed;
      }
      return real.send(to, messages);
    },
  };
  return { producer, isHanging: () => hanging, fail: () => fail() };
}

/** The `failAt`-th send to `topic` fails at once, like a Kafka hiccup; every other send goes through. */
function flakyProducer(real: Producer, topic: string, failAt: number) {
  let sends = 0;
  const producer: Producer = {
    ...real,
    async send(to, messages) {
      if (to === topic && ++sends === failAt) throw new AppError('kafka_unavailable', 'kafka send failed (test)', { retryable: true });
      return real.send(to, messages);
    },
  };
  return { producer, sends: () => sends };
}

function recordingStore(store: JobStatusStore, jobId: string): { store: JobStatusStore; puts: JobStatus[] } {
  const puts: JobStatus[] = [];
  return {
    puts,
    store: {
      get: (id) => store.get(id),
      async put(status) {
        if (status.jobId === jobId) puts.push(status);
        await store.put(status);
      },
    },
  };
}

describe('job runner across restarts', () => {
  it('re-runs a job interrupted mid-way from its first chunk and ends with the counts of a clean run', async () => {
    const account = fx.account();
    const { items, acceptedIds } = jobItems();
    const groupId = `jobs-crash-${uniqueSuffix()}`;
    const queued = await fx.writer.writeWhole(account, 'bulk', items);

    const hanging = hangingProducer(fx.producer, fx.kafka.topic('eventsRaw'), 2);
    const first = await fx.startRunner({ groupId, producer: hanging.producer });
    await waitFor(() => hanging.isHanging(), { description: 'the third chunk write hanging' });
    const partial = await fx.statusStore.get(queued.jobId);
    expect(partial).toMatchObject({ status: 'processing', processed: 1000 });
    const stopped = first.runner.stop();
    hanging.fail();
    await stopped;

    const onTopic = (await fx.readToEnd(fx.kafka.topic('jobChunks'))).filter((m) => m.key?.toString() === queued.jobId);
    const firstChunk = onTopic[0];
    const committed = (await committedOffsets(fx.kafka.kafka, groupId, fx.kafka.topic('jobChunks'))).get(firstChunk?.partition ?? -1) ?? '-1';
    expect(BigInt(committed)).toBeLessThanOrEqual(BigInt(firstChunk?.offset ?? '-1'));

    const recording = recordingStore(fx.statusStore, queued.jobId);
    const second = await fx.startRunner({ groupId, statusStore: recording.store });
    const resumed = await fx.waitForStatus(queued.jobId, isFinished, 'the interrupted job finished after the restart');
    // Recomputed from zero, never added to the stale 1,000.
    expect(recording.puts[0]).toMatchObject({ status: 'processing', processed: 0, accepted: 0 });
    expect(recording.puts[0]?.startedAt).toBe(partial?.startedAt);
    expect(acceptedIds.size).toBe(1700);
    expect(countsOf(resumed)).toMatchObject({ status: 'completed', totalEvents: 2000, processed: 2000, accepted: 1700, rejected: 222, duplicates: 78 });
    expect(resumed.errors).toHaveLength(100);
    expect(resumed.errors[0]).toEqual({ index: 4, eventId: 'c-4', field: '/events/4/email', code: 'invalid_format', message: expect.any(String) });

    const written = await fx.rawRecords(queued.jobId);
    expect(new Set(written.map((r) => r.eventId))).toEqual(acceptedIds);
    // The first two chunks were written by both runs; downstream dedupe absorbs the copies.
    expect(written.length).toBeGreaterThanOrEqual(acceptedIds.size);

    // The same events as a fresh job, run cleanly by the same runner: identical counts.
    const clean = await fx.writer.writeWhole(account, 'bulk', items);
    const cleanDone = await fx.waitForStatus(clean.jobId, isFinished, 'the clean job finished');
    expect(countsOf(resumed)).toEqual(countsOf(cleanDone));
    expect(await second.metric('ingest_jobs_finished_total', { status: 'completed' })).toBeGreaterThanOrEqual(2);
    await second.runner.stop();
  });

  it('retries a job whose write failed instead of skipping the chunk, keeping the chunks of earlier batches', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const jobId = `flaky-${uniqueSuffix()}`;
    const ids = (seq: number, n: number) => Array.from({ length: n }, (_, i) => `flaky-${seq}-${i}`);
    const chunk = (seq: number, n: number): JobMessage => ({
      v: 1,
      jobId,
      accountId,
      source: 'bulk',
      type: 'chunk',
      seq,
      receivedAtMs: RECEIVED_AT_MS,
      items: ids(seq, n).map((eventId, i) => ({ index: seq * 500 + i, event: { eventName: 'e', domain: 'b.io', eventId } })),
    });
    await fx.produceJobMessages(jobId, [chunk(0, 500), chunk(1, 500), chunk(2, 7)]);
    const onTopic = (await fx.readToEnd(fx.kafka.topic('jobChunks'))).filter((m) => m.key?.toString() === jobId);
    const partition = onTopic[0]?.partition ?? -1;
    const flaky = flakyProducer(fx.producer, fx.kafka.topic('eventsRaw'), 2);
    const runner = await fx.startRunner({ producer: flaky.producer });
    try {
      // The chunks were handled in a batch of their own (the commit is held at the first one)
      // before the seal arrives, so the failing batch is the seal's alone.
      await waitFor(async () => (await committedOffsets(fx.kafka.kafka, runner.groupId, fx.kafka.topic('jobChunks'))).get(partition) === onTopic[0]?.offset, {
        description: 'the commit held at the first chunk',
      });
      await fx.produceJobMessages(jobId, [
        { v: 1, jobId, accountId, source: 'bulk', type: 'sealed', chunks: 3, totalEvents: 1007, receivedAtMs: RECEIVED_AT_MS },
      ]);
      const done = await fx.waitForStatus(jobId, isFinished, 'the job finished despite the failed write');
      expect(countsOf(done)).toEqual({ status: 'completed', totalEvents: 1007, processed: 1007, accepted: 1007, rejected: 0, duplicates: 0, errors: [] });
      expect(flaky.sends()).toBeGreaterThan(3);
      const written = new Set((await fx.rawRecords(jobId)).map((r) => r.eventId));
      expect(written).toEqual(new Set([...ids(0, 500), ...ids(1, 500), ...ids(2, 7)]));
    } finally {
      await runner.runner.stop();
    }
  });

  it('completes a job sealed after a restart from the chunks read again', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const jobId = `late-seal-${uniqueSuffix()}`;
    const groupId = `jobs-late-${uniqueSuffix()}`;
    const chunk = (seq: number, n: number): JobMessage => ({
      v: 1,
      jobId,
      accountId,
      source: 'bulk',
      type: 'chunk',
      seq,
      receivedAtMs: RECEIVED_AT_MS,
      items: Array.from({ length: n }, (_, i) => ({ index: seq * 500 + i, event: { eventName: 'e', domain: 'b.io', eventId: `late-${seq}-${i}` } })),
    });
    await fx.produceJobMessages(jobId, [chunk(0, 500), chunk(1, 20)]);
    const onTopic = (await fx.readToEnd(fx.kafka.topic('jobChunks'))).filter((m) => m.key?.toString() === jobId);
    const partition = onTopic[0]?.partition ?? -1;

    const first = await fx.startRunner({ groupId });
    const held = await waitFor(
      async () => {
        const offset = (await committedOffsets(fx.kafka.kafka, groupId, fx.kafka.topic('jobChunks'))).get(partition);
        return offset !== undefined && offset !== '-1' ? offset : undefined;
      },
      { description: 'a commit on the job partition' },
    );
    expect(held).toBe(onTopic[0]?.offset);
    await first.runner.stop();

    await fx.produceJobMessages(jobId, [{ v: 1, jobId, accountId, source: 'bulk', type: 'sealed', chunks: 2, totalEvents: 520, receivedAtMs: RECEIVED_AT_MS }]);
    const second = await fx.startRunner({ groupId });
    try {
      const done = await fx.waitForStatus(jobId, isFinished, 'the late-sealed job finished');
      expect(countsOf(done)).toEqual({ status: 'completed', totalEvents: 520, processed: 520, accepted: 520, rejected: 0, duplicates: 0, errors: [] });
    } finally {
      await second.runner.stop();
    }
  });
});

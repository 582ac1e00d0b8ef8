/**
 * Real servers: Kafka and Redis. The job runner reads jobs written by the gateway's own job
 * writer (or raw job messages) from jobs.chunks, writes accepted events to events.raw and the
 * job's progress to the real status store (Redis + jobs.progress).
 */
import type { JobChunk, JobChunkItem, JobMessage, JobStatus } from '@ingest/schemas';
import { committedOffsets, DEAD_LETTER_HEADERS, METRIC_NAMES } from '@ingest/platform';
import { uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJobRunnerFixture, type JobRunnerFixture, RECEIVED_AT_MS } from './job.runner.fixture.js';
import { ABANDON_REASONS } from './job-buffers.js';

let fx: JobRunnerFixture;

beforeAll(async () => {
  fx = await createJobRunnerFixture();
});

afterAll(async () => {
  await fx?.close();
});

const isFinished = (s: JobStatus) => s.status === 'completed' || s.status === 'failed';

describe('job runner: bulk jobs', () => {
  it('completes a bulk job of 1,201 events with exact counts, the first 100 errors and exactly the accepted events in events.raw', async () => {
    const account = fx.account();
    const GARBAGE = 11;
    const isInvalid = (i: number) => i === GARBAGE || i % 7 === 3;
    // The last 51 events repeat the ids of the first 51.
    const idOf = (i: number) => (i >= 1150 ? `ev-${i - 1150}` : `ev-${i}`);
    const items: JobChunkItem[] = Array.from({ length: 1201 }, (_, i) => {
      if (i === GARBAGE) return { index: i, event: 'garbage' };
      return {
        index: i,
        event: {
          eventName: 'Signed Up',
          email: i % 7 === 3 ? 'not-an-email' : ` User${i}@Example.COM `,
          eventId: idOf(i),
          timestamp: '2026-01-15T10:00:00.250+02:00',
          properties: { n: i, nested: { ok: true } },
        },
      };
    });
    // Oracle, written out: the first valid event with an id is accepted, later valid ones are duplicates.
    const acceptedIds = new Set<string>();
    let duplicates = 0;
    for (let i = 0; i < 1201; i++) {
      if (isInvalid(i)) continue;
      if (acceptedIds.has(idOf(i))) duplicates++;
      else acceptedIds.add(idOf(i));
    }
    expect({ accepted: acceptedIds.size, rejected: 173, duplicates }).toEqual({ accepted: 993, rejected: 173, duplicates: 35 });

    const queued = await fx.writer.writeWhole(account, 'bulk', items);
    const { runner, metric } = await fx.startRunner();
    let status: JobStatus;
    try {
      status = await fx.waitForStatus(queued.jobId, isFinished, 'the bulk job finished');
    } finally {
      // Each test runs its own runner (own group); one left running would race the next ones.
      await runner.stop();
    }

    expect(status).toMatchObject({
      jobId: queued.jobId,
      accountId: account.id,
      source: 'bulk',
      status: 'completed',
      totalEvents: 1201,
      processed: 1201,
      accepted: 993,
      rejected: 173,
      duplicates: 35,
      createdAt: queued.createdAt,
      completedAt: expect.any(String),
      startedAt: expect.any(String),
    });
    expect(status.failureReason).toBeUndefined();
    const firstInvalid = Array.from({ length: 1201 }, (_, i) => i)
      .filter(isInvalid)
      .slice(0, 100);
    expect(status.errors).toHaveLength(100);
    expect(status.errors).toEqual(
      firstInvalid.map((i) =>
        i === GARBAGE
          ? { index: i, field: `/events/${i}`, code: 'invalid_type', message: expect.any(String) }
          : { index: i, eventId: idOf(i), field: `/events/${i}/email`, code: 'invalid_format', message: expect.any(String) },
      ),
    );

    const records = await fx.rawRecords(queued.jobId);
    expect(records).toHaveLength(993);
    expect(new Set(records.map((r) => r.eventId))).toEqual(acceptedIds);
    expect(records.find((r) => r.eventId === 'ev-5')).toEqual({
      v: 1,
      accountId: account.id,
      eventId: 'ev-5',
      eventName: 'Signed Up',
      email: 'user5@example.com',
      domain: null,
      timestampMs: Date.UTC(2026, 0, 15, 8, 0, 0, 250),
      receivedAtMs: RECEIVED_AT_MS,
      properties: { n: 5, nested: { ok: true } },
      source: 'bulk',
      jobId: queued.jobId,
    });
    // The first valid copy of a repeated id is the one written.
    expect(records.find((r) => r.eventId === 'ev-0')?.properties.n).toBe(0);

    expect(await metric(METRIC_NAMES.jobsFinished, { source: 'bulk', status: 'completed' })).toBeGreaterThanOrEqual(1);
    expect(await metric(METRIC_NAMES.jobEventsProcessed, { source: 'bulk', outcome: 'duplicate' })).toBeGreaterThanOrEqual(35);
    // The job's events count as accepted/rejected under the gateway's metric names, by source and first error code.
    expect(await metric(METRIC_NAMES.eventsAccepted, { source: 'bulk' })).toBe(993);
    expect(await metric(METRIC_NAMES.eventsRejected, { source: 'bulk', code: 'invalid_format' })).toBe(172);
    expect(await metric(METRIC_NAMES.eventsRejected, { source: 'bulk', code: 'invalid_type' })).toBe(1);
    expect(await metric(METRIC_NAMES.eventsAccepted, { source: 'csv' })).toBe(0);
    // Three chunks and the seal, counted once their batch is done.
    await waitFor(async () => ((await metric(METRIC_NAMES.consumerMessages, { consumer: 'jobs', outcome: 'ok' })) >= 4 ? true : undefined), {
      description: 'the job runner counted its messages',
    });
    expect(await metric(METRIC_NAMES.consumerBatchFailures, { consumer: 'jobs' })).toBe(0);
  });

  it('shows live progress while a job of several chunks runs', async () => {
    const account = fx.account();
    const items: JobChunkItem[] = Array.from({ length: 1600 }, (_, i) => ({ index: i, event: { eventName: 'e', domain: 'example.com', eventId: `p-${i}` } }));
    const puts: JobStatus[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const job = fx.writer.open(account, 'bulk');
    // Holds the runner right after the first mid-job progress is stored, until the test saw it.
    const slowStore = {
      get: fx.statusStore.get,
      async put(status: JobStatus) {
        await fx.statusStore.put(status);
        if (status.jobId !== job.jobId) return;
        puts.push(status);
        if (status.status === 'processing' && status.processed > 0) await gate;
      },
    };
    const { runner } = await fx.startRunner({ statusStore: slowStore });
    try {
      await job.writeChunk(items);
      const queued = await job.seal(items.length);

      const live = await fx.waitForStatus(queued.jobId, (s) => s.status === 'processing' && s.processed > 0, 'progress mid-job');
      expect(live).toMatchObject({ status: 'processing', totalEvents: 1600, processed: 500, accepted: 500, rejected: 0, duplicates: 0, completedAt: null });
      release();
      const done = await fx.waitForStatus(queued.jobId, isFinished, 'the job finished');
      expect(done).toMatchObject({ status: 'completed', processed: 1600, accepted: 1600 });

      expect(puts.map((p) => `${p.status}:${p.processed}`)).toEqual(['processing:0', 'processing:500', 'processing:1000', 'processing:1500', 'completed:1600']);
      for (const p of puts) expect(p.processed).toBe(p.accepted + p.rejected + p.duplicates);
      expect(new Set(puts.map((p) => p.startedAt)).size).toBe(1);
    } finally {
      release();
      await runner.stop();
    }
  });
});

describe('job runner: CSV jobs', () => {
  it('reports row and column for rejected rows', async () => {
    const account = fx.account();
    const longKey = `plan/${'x'.repeat(300)}`;
    const row = (index: number, rowNo: number, event: Record<string, unknown>): JobChunkItem => ({
      index,
      row: rowNo,
      event: { eventName: 'Imported', timestamp: '2025-06-01T00:00:00Z', email: `r${rowNo}@b.io`, eventId: `csv-${rowNo}`, properties: {}, ...event },
    });
    const job = fx.writer.open(account, 'csv');
    await job.writeChunk([
      row(0, 2, {}),
      row(1, 3, { timestamp: 'yesterday' }),
      { index: 2, row: 4, event: null, error: { code: 'column_count', message: 'expected 5 cells, found 4' } },
      row(3, 5, { eventId: 'csv-2' }), // same id as row 2: a duplicate
      row(4, 7, { email: 'nope' }), // row 6 was blank
    ]);
    await job.writeChunk([row(5, 8, { properties: { [longKey]: 'v' } }), row(6, 9, { eventName: '' }), row(7, 10, {})]);
    const queued = await job.seal(8);
    const { runner, metric } = await fx.startRunner();
    try {
      const status = await fx.waitForStatus(queued.jobId, isFinished, 'the csv job finished');
      expect(status).toMatchObject({ status: 'completed', source: 'csv', totalEvents: 8, processed: 8, accepted: 2, rejected: 5, duplicates: 1 });
      expect(status.errors).toEqual([
        { index: 1, row: 3, column: 'timestamp', code: 'invalid_format', message: expect.any(String) },
        { index: 2, row: 4, code: 'column_count', message: 'expected 5 cells, found 4' },
        { index: 4, row: 7, column: 'email', code: 'invalid_format', message: expect.any(String) },
        { index: 5, row: 8, column: longKey, code: 'too_long', message: expect.any(String) },
        { index: 6, row: 9, column: 'event_name', code: 'too_short', message: expect.any(String) },
      ]);
      const records = await fx.rawRecords(queued.jobId);
      expect(records.map((r) => r.eventId).sort()).toEqual(['csv-10', 'csv-2']);
      expect(records.every((r) => r.source === 'csv' && r.accountId === account.id)).toBe(true);
      expect(await metric(METRIC_NAMES.eventsAccepted, { source: 'csv' })).toBe(2);
      expect(await metric(METRIC_NAMES.eventsRejected, { source: 'csv' })).toBe(5);
      expect(await metric(METRIC_NAMES.eventsRejected, { source: 'csv', code: 'column_count' })).toBe(1);
      expect(await metric(METRIC_NAMES.eventsRejected, { source: 'csv', code: 'invalid_format' })).toBe(2);
    } finally {
      await runner.stop();
    }
  });
});

function chunkOf(jobId: string, accountId: string, seq: number, ids: string[]): JobChunk {
  return {
    v: 1,
    jobId,
    accountId,
    source: 'bulk',
    type: 'chunk',
    seq,
    receivedAtMs: RECEIVED_AT_MS,
    items: ids.map((eventId, i) => ({ index: seq * 500 + i, event: { eventName: 'e', email: 'a@b.io', eventId } })),
  };
}

function sealOf(jobId: string, accountId: string, chunks: number, totalEvents: number): JobMessage {
  return { v: 1, jobId, accountId, source: 'bulk', type: 'sealed', chunks, totalEvents, receivedAtMs: RECEIVED_AT_MS };
}

describe('job runner: unfinished jobs and offsets', () => {
  it('writes nothing for an aborted job, and an unsealed job holds the commit but not a later job', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const [unsealed, aborted, later] = ['unsealed', 'aborted', 'later'].map((n) => `${n}-${uniqueSuffix()}`) as [string, string, string];
    // One key for all: the three jobs share a partition, in exactly this order.
    const key = `partition-${uniqueSuffix()}`;
    await fx.produceJobMessages(key, [
      chunkOf(unsealed, accountId, 0, ['u0', 'u1']),
      chunkOf(aborted, accountId, 0, ['a0']),
      { v: 1, jobId: aborted, accountId, source: 'bulk', type: 'aborted', reason: 'upload_failed' },
      chunkOf(unsealed, accountId, 1, ['u2']),
      chunkOf(later, accountId, 0, ['l0', 'l1']),
      chunkOf(later, accountId, 1, ['l2']),
      sealOf(later, accountId, 2, 3),
    ]);
    const onTopic = (await fx.readToEnd(fx.kafka.topic('jobChunks'))).filter((m) => m.key?.toString() === key);
    expect(onTopic).toHaveLength(7);
    const partition = onTopic[0]?.partition ?? -1;
    const unsealedFirstOffset = onTopic[0]?.offset;

    const finished: JobStatus[] = [];
    const first = await fx.startRunner({ onJobFinished: async (s) => void finished.push(s) });
    const { groupId } = first;
    try {
      const done = await fx.waitForStatus(later, isFinished, 'the later job finished');
      expect(done).toMatchObject({ status: 'completed', processed: 3, accepted: 3 });
      const committed = await waitFor(
        async () => {
          const offset = (await committedOffsets(fx.kafka.kafka, groupId, fx.kafka.topic('jobChunks'))).get(partition);
          return offset !== undefined && offset !== '-1' ? offset : undefined;
        },
        { description: 'a committed offset on the shared partition' },
      );
      expect(committed).toBe(unsealedFirstOffset);
      expect(await fx.statusStore.get(unsealed)).toBeUndefined();
      expect(await fx.statusStore.get(aborted)).toBeUndefined();
      const raw = await fx.readToEnd(fx.kafka.topic('eventsRaw'));
      const jobIds = new Set(raw.map((m) => (JSON.parse(m.value?.toString() ?? '{}') as { jobId?: string }).jobId));
      expect(jobIds.has(later)).toBe(true);
      expect(jobIds.has(unsealed)).toBe(false);
      expect(jobIds.has(aborted)).toBe(false);
      expect(finished.filter((s) => s.jobId === later)).toHaveLength(1);
    } finally {
      await first.runner.stop();
    }

    // A restart re-reads the partition from the held commit: the finished job met again is
    // skipped (no status write, no event written again; the hook is called again, at least
    // once), and the unsealed job's buffers are rebuilt so its seal can complete it.
    const puts: JobStatus[] = [];
    const again: JobStatus[] = [];
    const second = await fx.startRunner({
      groupId,
      statusStore: {
        get: (id) => fx.statusStore.get(id),
        async put(s) {
          puts.push(s);
          await fx.statusStore.put(s);
        },
      },
      onJobFinished: async (s) => void again.push(s),
    });
    try {
      await waitFor(() => again.some((s) => s.jobId === later), { description: 'the finished job met again' });
      expect(again.find((s) => s.jobId === later)).toMatchObject({ status: 'completed', accepted: 3 });
      await fx.produceJobMessages(key, [sealOf(unsealed, accountId, 2, 3)]);
      const sealedDone = await fx.waitForStatus(unsealed, isFinished, 'the formerly unsealed job finished');
      expect(sealedDone).toMatchObject({ status: 'completed', processed: 3, accepted: 3 });
      expect(puts.filter((s) => s.jobId === later)).toEqual([]);
      expect(await fx.rawRecords(later)).toHaveLength(3);
      const end = (BigInt(onTopic.at(-1)?.offset ?? '0') + 2n).toString();
      await waitFor(async () => (await committedOffsets(fx.kafka.kafka, groupId, fx.kafka.topic('jobChunks'))).get(partition) === end, {
        description: `commit moved to ${end}`,
      });
    } finally {
      await second.runner.stop();
    }
  });

  it('abandons a job without a seal once a newer message is past the seal timeout, and no longer holds the commit for it', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const [stale, fresh] = ['stale', 'fresh'].map((n) => `${n}-${uniqueSuffix()}`) as [string, string];
    const key = `partition-${uniqueSuffix()}`;
    await fx.produceJobMessages(key, [chunkOf(stale, accountId, 0, ['s0'])]);
    const [staleChunk] = (await fx.readToEnd(fx.kafka.topic('jobChunks'))).filter((m) => m.key?.toString() === key);
    const partition = staleChunk?.partition ?? -1;

    // Timeout 0: any later message with a newer timestamp (Kafka time, not the runner's clock) gives the job up.
    const runner = await fx.startRunner({ sealTimeoutMs: 0 });
    const committed = async () => (await committedOffsets(fx.kafka.kafka, runner.groupId, fx.kafka.topic('jobChunks'))).get(partition);
    try {
      await waitFor(async () => (await committed()) === staleChunk?.offset, { description: 'the commit held at the stale chunk' });
      await waitFor(() => Date.now() > (staleChunk?.timestamp ?? Infinity), { description: 'the clock past the stale chunk' });
      await fx.produceJobMessages(key, [chunkOf(fresh, accountId, 0, ['f0']), sealOf(fresh, accountId, 1, 1)]);
      expect(await fx.waitForStatus(fresh, isFinished, 'the fresh job finished')).toMatchObject({ status: 'completed', accepted: 1 });
      const end = (BigInt(staleChunk?.offset ?? '0') + 3n).toString();
      await waitFor(async () => (await committed()) === end, { description: `commit moved past the abandoned job to ${end}` });
      // At least: re-reading the earlier tests' jobs with a timeout of 0 may give up some of those too (they are finished already).
      expect(await runner.metric(METRIC_NAMES.jobsAbandoned, { source: 'bulk', reason: 'idle' })).toBeGreaterThanOrEqual(1);
      // Given up with a reason anyone holding its id can read.
      expect(await fx.waitForStatus(stale, isFinished, 'the abandoned job failed')).toMatchObject({
        status: 'failed',
        failureReason: ABANDON_REASONS.idle,
        processed: 0,
        totalEvents: 1,
      });

      // Its seal arriving after all: the chunks are gone, the job stays failed instead of counting short.
      await fx.produceJobMessages(key, [sealOf(stale, accountId, 1, 1)]);
      const end2 = (BigInt(end) + 1n).toString();
      await waitFor(async () => (await committed()) === end2, { description: `commit moved past the late seal to ${end2}` });
      expect(await fx.statusStore.get(stale)).toMatchObject({ status: 'failed', failureReason: ABANDON_REASONS.idle });
      expect(await fx.rawRecords(stale)).toEqual([]);
    } finally {
      await runner.runner.stop();
    }
  });

  it('fails a sealed job whose chunks do not match the seal', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const jobId = `short-${uniqueSuffix()}`;
    await fx.produceJobMessages(jobId, [chunkOf(jobId, accountId, 0, ['s0']), sealOf(jobId, accountId, 2, 501)]);
    const { runner, metric } = await fx.startRunner();
    try {
      const status = await fx.waitForStatus(jobId, isFinished, 'the short job finished');
      expect(status).toMatchObject({ status: 'failed', failureReason: 'received 1 of 2 chunks', processed: 0, totalEvents: 501 });
      expect((await fx.rawRecords(jobId)).length).toBe(0);
      expect(await metric(METRIC_NAMES.jobsFinished, { status: 'failed' })).toBeGreaterThanOrEqual(1);
    } finally {
      await runner.stop();
    }
  });
});

describe('job runner: poison messages', () => {
  it('dead-letters undecodable and unknown job messages and still completes later jobs', async () => {
    const accountId = `acc_${uniqueSuffix()}`;
    const jobId = `after-poison-${uniqueSuffix()}`;
    await fx.produceJobMessages(jobId, [
      '{"v":1, not json',
      JSON.stringify({ ...chunkOf(jobId, accountId, 0, ['x']), v: 2 }),
      JSON.stringify({ v: 1, jobId, accountId, source: 'bulk', type: 'resumed' }),
      JSON.stringify({ ...chunkOf(jobId, accountId, 0, ['x']), seq: 'first' }),
      chunkOf(jobId, accountId, 0, ['good-0', 'good-1']),
      sealOf(jobId, accountId, 1, 2),
    ]);
    const { runner, metric } = await fx.startRunner();
    try {
      const status = await fx.waitForStatus(jobId, isFinished, 'the job after the poison messages finished');
      expect(status).toMatchObject({ status: 'completed', accepted: 2, processed: 2 });

      const letters = await waitFor(
        async () => {
          const found = (await fx.readToEnd(fx.kafka.topic('deadLetters'))).filter((m) => m.key?.toString() === jobId);
          return found.length >= 4 ? found : undefined;
        },
        { description: 'four dead letters' },
      );
      expect(letters.map((l) => l.headers[DEAD_LETTER_HEADERS.code])).toEqual(['invalid_json', 'unknown_version', 'unknown_message_type', 'schema_mismatch']);
      expect(letters.map((l) => Number(l.headers[DEAD_LETTER_HEADERS.sourceOffset]))).toEqual(
        [...letters].map((l) => Number(l.headers[DEAD_LETTER_HEADERS.sourceOffset])).sort((a, b) => a - b),
      );
      expect(letters[0]?.headers[DEAD_LETTER_HEADERS.sourceTopic]).toBe(fx.kafka.topic('jobChunks'));
      expect(letters[0]?.value?.toString()).toBe('{"v":1, not json');
      expect(letters[3]?.headers[DEAD_LETTER_HEADERS.reason]).toMatch(/\/seq must be integer/);
      expect(await metric(METRIC_NAMES.deadLetters, { consumer: 'jobs', code: 'invalid_json' })).toBeGreaterThanOrEqual(1);
    } finally {
      await runner.stop();
    }
  });
});

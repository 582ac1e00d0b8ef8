import type { JobChunk, JobChunkItem } from '@ingest/schemas';
import { createEventValidator } from '@ingest/domain';
import { describe, expect, it } from 'vitest';
import { csvColumnOf, JobTally, MAX_JOB_ERRORS, withJobEventId } from './job-tally.js';

const RECEIVED = Date.UTC(2026, 0, 15, 12, 0, 0);
const validate = createEventValidator({ generateId: () => 'random-id' });

function chunk(seq: number, items: JobChunkItem[], source: 'bulk' | 'csv' = 'bulk'): JobChunk {
  return { v: 1, jobId: 'job-1', accountId: 'acc_1', source, type: 'chunk', seq, receivedAtMs: RECEIVED + seq, items };
}

describe('JobTally (bulk)', () => {
  it('accepts valid events as EventRecords of the job, once per eventId', () => {
    const tally = new JobTally({ jobId: 'job-1', accountId: 'acc_1', source: 'bulk' }, validate);
    const records = tally.addChunk(
      chunk(0, [
        { index: 0, event: { eventName: 'Signed Up', email: ' Ada@Example.com ', eventId: 'e0', timestamp: '2026-01-01T00:00:00.5+01:00' } },
        { index: 1, event: { eventName: 'Signed Up', domain: 'Example.com', eventId: 'e0' } },
        { index: 2, event: { eventName: 'Page', domain: 'b.io', eventId: 'e2', properties: { plan: 'pro' } } },
      ]),
    );
    expect(records).toEqual([
      {
        v: 1,
        accountId: 'acc_1',
        eventId: 'e0',
        eventName: 'Signed Up',
        email: 'ada@example.com',
        domain: null,
        timestampMs: Date.UTC(2025, 11, 31, 23, 0, 0, 500),
        receivedAtMs: RECEIVED,
        properties: {},
        source: 'bulk',
        jobId: 'job-1',
      },
      expect.objectContaining({ eventId: 'e2', domain: 'b.io', timestampMs: RECEIVED, properties: { plan: 'pro' } }),
    ]);
    // A duplicate in a later chunk is still a duplicate: ids are remembered for the whole job.
    expect(tally.addChunk(chunk(1, [{ index: 3, event: { eventName: 'x', email: 'a@b.io', eventId: 'e2' } }]))).toEqual([]);
    expect(tally.counts()).toEqual({ processed: 4, accepted: 2, rejected: 0, duplicates: 2, errors: [] });
  });

  it('rejects invalid events and item errors with pointers into the request', () => {
    const tally = new JobTally({ jobId: 'job-1', accountId: 'acc_1', source: 'bulk' }, validate);
    const records = tally.addChunk(
      chunk(0, [
        { index: 0, event: { eventName: 'x', eventId: 'no-identity' } },
        { index: 1, event: 'garbage' },
        { index: 2, event: null, error: { code: 'too_large', message: 'the event is too large' } },
        { index: 3, event: { eventName: '', email: 'nope', eventId: 'bad' } },
        // An invalid event does not take its id: the valid one after it is accepted.
        { index: 4, event: { eventName: 'x', email: 'a@b.io', eventId: 'bad' } },
      ]),
    );
    expect(records.map((r) => r.eventId)).toEqual(['bad']);
    const { errors, ...counts } = tally.counts();
    expect(counts).toEqual({ processed: 5, accepted: 1, rejected: 4, duplicates: 0 });
    expect(errors).toEqual([
      { index: 0, eventId: 'no-identity', field: '/events/0/email', code: 'required', message: 'at least one of email or domain is required' },
      { index: 1, field: '/events/1', code: 'invalid_type', message: 'each event must be a JSON object' },
      { index: 2, field: '/events/2', code: 'too_large', message: 'the event is too large' },
      { index: 3, eventId: 'bad', field: '/events/3/eventName', code: 'too_short', message: expect.any(String) },
    ]);
  });

  it('keeps the first 100 errors in order and keeps counting past them', () => {
    const tally = new JobTally({ jobId: 'job-1', accountId: 'acc_1', source: 'bulk' }, validate);
    const items = Array.from({ length: 150 }, (_, index) => ({ index, event: { eventName: 'x', email: 'not-an-email', domain: 'not a domain' } }));
    tally.addChunk(chunk(0, items));
    const { errors, rejected, processed, errorsTotal, errorsTruncated } = tally.counts();
    expect({ rejected, processed }).toEqual({ rejected: 150, processed: 150 });
    expect(errors).toHaveLength(MAX_JOB_ERRORS);
    expect({ errorsTotal, errorsTruncated }).toEqual({ errorsTotal: 300, errorsTruncated: true });
    // Two errors per event: events 0..49 fill the list.
    expect(errors.slice(0, 2).map((e) => e.field)).toEqual(['/events/0/email', '/events/0/domain']);
    expect(errors.at(-1)?.field).toBe('/events/49/domain');
  });

  it('counts every rejected event under the code of its first error, also past the first 100 errors', () => {
    const tally = new JobTally({ jobId: 'job-1', accountId: 'acc_1', source: 'bulk' }, validate);
    const items: JobChunkItem[] = Array.from({ length: 120 }, (_, index) => ({
      index,
      event: { eventName: 'x', email: 'not-an-email', domain: 'not a domain' },
    }));
    items.push({ index: 120, event: null, error: { code: 'too_large', message: 'the event is too large' } });
    items.push({ index: 121, event: { eventName: 'ok', email: 'a@b.io', eventId: 'fine' } });
    tally.addChunk(chunk(0, items));
    expect(Object.fromEntries(tally.rejectionCodes())).toEqual({ invalid_format: 120, too_large: 1 });
    expect(tally.counts().rejected).toBe(121);
  });

  it('gives an event without an id the same id on every run', () => {
    const run = () =>
      new JobTally({ jobId: 'job-1', accountId: 'acc_1', source: 'bulk' }, validate).addChunk(
        chunk(0, [{ index: 7, event: { eventName: 'x', email: 'a@b.io' } }]),
      );
    expect(run()[0]?.eventId).toBe('job_job-1_7');
    expect(run()).toEqual(run());
  });
});

describe('JobTally (csv)', () => {
  it('reports rows and columns', () => {
    const tally = new JobTally({ jobId: 'job-1', accountId: 'acc_1', source: 'csv' }, validate);
    const longKey = `a/b~${'k'.repeat(300)}`;
    tally.addChunk(
      chunk(
        0,
        [
          { index: 0, row: 2, event: { eventName: 'x', timestamp: 'yesterday', email: 'a@b.io', eventId: 'r2', properties: {} } },
          { index: 1, row: 4, event: null, error: { code: 'column_count', message: 'expected 4 cells, found 3' } },
          { index: 2, row: 5, event: null, error: { code: 'bad_cell', message: 'odd cell', column: 'plan' } },
          { index: 3, row: 6, event: { eventName: 'x', timestamp: '2026-01-01T00:00:00Z', email: 'a@b.io', eventId: 'r6', properties: { [longKey]: 'v' } } },
          {
            index: 4,
            row: 7,
            event: JSON.parse('{"eventName":"x","timestamp":"2026-01-01T00:00:00Z","domain":"b.io","eventId":"r7","properties":{"__proto__":"v"}}'),
          },
        ],
        'csv',
      ),
    );
    expect(tally.counts().errors).toEqual([
      { index: 0, row: 2, column: 'timestamp', code: 'invalid_format', message: expect.any(String) },
      { index: 1, row: 4, code: 'column_count', message: 'expected 4 cells, found 3' },
      { index: 2, row: 5, column: 'plan', code: 'bad_cell', message: 'odd cell' },
      { index: 3, row: 6, column: longKey, code: 'too_long', message: expect.any(String) },
      { index: 4, row: 7, column: '__proto__', code: 'forbidden_key', message: expect.any(String) },
    ]);
  });
});

describe('csvColumnOf', () => {
  it.each([
    ['/eventName', 'event_name'],
    ['/timestamp', 'timestamp'],
    ['/email', 'email'],
    ['/domain', 'domain'],
    ['/eventId', 'event_id'],
    ['/properties/plan', 'plan'],
    ['/properties/a~1b~0c', 'a/b~c'],
    ['/properties/deep/inner', 'deep'],
    ['/properties', undefined],
    ['', undefined],
    ['/constructor', undefined],
  ])('%s -> %s', (pointer, column) => {
    expect(csvColumnOf(pointer)).toBe(column);
  });
});

describe('withJobEventId', () => {
  it('leaves events with an eventId (valid or not) and non-objects alone', () => {
    const withId = { eventName: 'x', eventId: 42 };
    expect(withJobEventId(withId, 'j', 1)).toBe(withId);
    expect(withJobEventId('garbage', 'j', 1)).toBe('garbage');
    expect(withJobEventId([1], 'j', 1)).toEqual([1]);
    expect(withJobEventId({ eventName: 'x' }, 'j', 1)).toEqual({ eventName: 'x', eventId: 'job_j_1' });
  });
});

import type { EventRecord } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { EVENT_COLUMNS, type EventRowOut, fromEventRow, toEventLine } from './events-table.js';

const record: EventRecord = {
  v: 1,
  accountId: 'acc_1',
  eventId: 'evt\twith\ttabs\\and\nnewline\r',
  eventName: 'Signed Up',
  email: 'ada@example.com',
  domain: null,
  timestampMs: 1_767_225_600_123,
  receivedAtMs: 1_767_225_601_456,
  properties: { plan: 'pro', quote: 'say "hi"', path: 'C:\\temp', multi: 'a\nb', tab: 'x\ty' },
  source: 'bulk',
  jobId: '01a211fd-2953-7229-b23a-2afa2ed12a4c',
};

/** How ClickHouse reads a TabSeparated field: \\ \t \n \r escapes back to their characters. */
function unescape(field: string): string {
  return field.replace(/\\([\\tnr])/g, (_, c: string) => ({ '\\': '\\', t: '\t', n: '\n', r: '\r' })[c] ?? c);
}

const utc = (epochSeconds: number) => new Date(epochSeconds * 1000).toISOString().slice(0, 19).replace('T', ' ');

describe('toEventLine', () => {
  it("writes a newer writer's record (fields this release does not know) as the same row", () => {
    const newer = { ...record, userId: 'u-1', context: { ip: '203.0.113.9' } } as EventRecord;
    expect(toEventLine(newer, 1_767_225_600_000)).toBe(toEventLine(record, 1_767_225_600_000));
  });

  it('holds every column in order, one field per column, tabs and newlines only as separators', () => {
    const line = toEventLine(record, 1_767_225_602_999);
    expect(line).not.toContain('\n');
    const fields = line.split('\t').map(unescape);
    expect(fields).toHaveLength(EVENT_COLUMNS.length);
    expect(Object.fromEntries(EVENT_COLUMNS.map((column, i) => [column, fields[i]]))).toEqual({
      account_id: 'acc_1',
      event_id: record.eventId,
      event_name: 'Signed Up',
      email: 'ada@example.com',
      domain: '',
      event_time: utc(1_767_225_600),
      event_time_ms: '1767225600123',
      received_at: utc(1_767_225_601),
      received_at_ms: '1767225601456',
      properties: JSON.stringify(record.properties),
      source: 'bulk',
      job_id: record.jobId,
      inserted_at: utc(1_767_225_602),
    });
    expect(JSON.parse(fields[EVENT_COLUMNS.indexOf('properties')] ?? '')).toEqual(record.properties);
  });

  it('reaches ClickHouse with unpaired surrogates as U+FFFD (it refuses the whole insert over invalid UTF-8)', () => {
    const line = toEventLine({ ...record, eventName: 'a\ud800b', email: 'x\udc00@b.io' }, 0);
    const sent = Buffer.from(line, 'utf8').toString('utf8').split('\t');
    expect(sent[EVENT_COLUMNS.indexOf('event_name')]).toBe('a\ufffdb');
    expect(sent[EVENT_COLUMNS.indexOf('email')]).toBe('x\ufffd@b.io');
  });

  it('writes DateTimes as UTC text and keeps them right across calls with other seconds', () => {
    const first = toEventLine({ ...record, timestampMs: Date.UTC(2026, 0, 15, 10, 0, 0, 7) }, Date.UTC(2026, 0, 15, 10, 0, 5));
    const second = toEventLine({ ...record, timestampMs: Date.UTC(2026, 5, 1, 23, 59, 59, 999) }, Date.UTC(2026, 0, 15, 10, 0, 5));
    expect(first.split('\t')[EVENT_COLUMNS.indexOf('event_time')]).toBe('2026-01-15 10:00:00');
    expect(second.split('\t')[EVENT_COLUMNS.indexOf('event_time')]).toBe('2026-06-01 23:59:59');
    expect(second.split('\t')[EVENT_COLUMNS.indexOf('inserted_at')]).toBe('2026-01-15 10:00:05');
  });

  it('leaves empty strings for a missing identity and job', () => {
    const fields = toEventLine({ ...record, email: null, domain: 'acme.io', jobId: null }, 0).split('\t');
    expect(fields[EVENT_COLUMNS.indexOf('email')]).toBe('');
    expect(fields[EVENT_COLUMNS.indexOf('domain')]).toBe('acme.io');
    expect(fields[EVENT_COLUMNS.indexOf('job_id')]).toBe('');
  });
});

describe('the events row: columns, line and read-back in one module', () => {
  it('reads back, column by column, the event the line wrote (the columns and the line agree)', () => {
    for (const written of [record, { ...record, email: null, domain: 'acme.io', jobId: null, source: 'api' as const }]) {
      const fields = toEventLine(written, 1_767_225_602_999).split('\t').map(unescape);
      const row = Object.fromEntries(EVENT_COLUMNS.map((column, i) => [column, fields[i]])) as unknown as EventRowOut;
      expect(fromEventRow(row)).toEqual({
        eventId: written.eventId,
        eventName: written.eventName,
        email: written.email,
        domain: written.domain,
        timestampMs: written.timestampMs,
        receivedAtMs: written.receivedAtMs,
        properties: written.properties,
        source: written.source,
        jobId: written.jobId,
      });
    }
  });

  it('names every column a read selects among the columns the line writes', () => {
    // Every key of EventRowOut, checked by the compiler: a column added to the read is listed here.
    const read = {
      event_id: true,
      event_name: true,
      email: true,
      domain: true,
      event_time_ms: true,
      received_at_ms: true,
      properties: true,
      source: true,
      job_id: true,
    } satisfies Record<keyof EventRowOut, true>;
    expect(Object.keys(read).filter((c) => !(EVENT_COLUMNS as readonly string[]).includes(c))).toEqual([]);
  });
});

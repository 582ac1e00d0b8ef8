import type { EventRecord } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { EVENT_COLUMNS, toEventLine, toEventRow } from './event-row.js';

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
  it('holds the same values as toEventRow, one field per column, tabs and newlines only as separators', () => {
    const line = toEventLine(record, 1_767_225_602_999);
    expect(line).not.toContain('\n');
    const fields = line.split('\t').map(unescape);
    expect(fields).toHaveLength(EVENT_COLUMNS.length);
    const row = toEventRow(record, 1_767_225_602_999);
    const expected = EVENT_COLUMNS.map((column) => {
      const value = row[column];
      return column === 'event_time' || column === 'received_at' || column === 'inserted_at' ? utc(value as number) : String(value);
    });
    expect(fields).toEqual(expected);
    expect(JSON.parse(fields[EVENT_COLUMNS.indexOf('properties')] ?? '')).toEqual(record.properties);
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

import type { EventRecord } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import {
  CURRENT_EVENT_COLUMNS,
  EVENT_COLUMNS,
  EVENT_COLUMNS_BEFORE_PERSON_IDS,
  EVENTS_ROW_FORMATS,
  type EventRowOut,
  eventsRowFormatOf,
  eventsRowFormatOfLine,
  LEGACY_BEFORE_PERSON_IDS_FORMAT,
  eventsShapeOf,
  fromEventRow,
  toCurrentEventLine,
  toEventLine,
  toEventLineBeforePersonIds,
} from './events-table.js';

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
    const newer = { ...record, futureField: 'x' } as EventRecord;
    expect(toEventLine(newer, 1_767_225_600_000)).toBe(toEventLine(record, 1_767_225_600_000));
  });

  it('writes userId, anonymousId and context (JSON text) like the current line, escaped', () => {
    const segment: EventRecord = { ...record, userId: 'user\t1', anonymousId: 'anon\n2', context: { library: { name: 'analytics-node' }, ip: 'a\tb' } };
    const fields = toEventLine(segment, 0).split('\t');
    expect(fields).toHaveLength(16);
    for (const column of ['user_id', 'anonymous_id', 'context'] as const) {
      expect(fields[EVENT_COLUMNS.indexOf(column)], column).toBe(toCurrentEventLine(segment, 0).split('\t')[CURRENT_EVENT_COLUMNS.indexOf(column)]);
    }
    expect(unescape(fields[EVENT_COLUMNS.indexOf('user_id')] ?? '')).toBe('user\t1');
    expect(JSON.parse(unescape(fields[EVENT_COLUMNS.indexOf('context')] ?? ''))).toEqual(segment.context);
    // Before migration 0007: the 13 columns of 0001, the person columns left out.
    const before = toEventLineBeforePersonIds(segment, 0).split('\t');
    expect(before).toEqual(fields.filter((_, i) => !['user_id', 'anonymous_id', 'context'].includes(EVENT_COLUMNS[i] ?? '')));
    expect(before).toHaveLength(EVENT_COLUMNS_BEFORE_PERSON_IDS.length);
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
      user_id: '',
      anonymous_id: '',
      context: '',
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

  it('reads userId, anonymousId and context back, and leaves each out when it was empty', () => {
    const segment: EventRecord = { ...record, userId: 'u\t1', context: { library: { name: 'analytics-node', version: '2.1.0' } } };
    const fields = toEventLine(segment, 0).split('\t').map(unescape);
    const back = fromEventRow(Object.fromEntries(EVENT_COLUMNS.map((column, i) => [column, fields[i]])) as unknown as EventRowOut);
    expect(back).toMatchObject({ userId: 'u\t1', context: segment.context });
    expect(back).not.toHaveProperty('anonymousId');
    expect(() => fromEventRow({ ...(Object.fromEntries(EVENT_COLUMNS.map((c, i) => [c, fields[i]])) as unknown as EventRowOut), context: '[1]' })).toThrow(
      /stored context of event [\s\S]* not a JSON object/,
    );
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
      user_id: true,
      anonymous_id: true,
      context: true,
    } satisfies Record<keyof EventRowOut, true>;
    expect(Object.keys(read).filter((c) => !(EVENT_COLUMNS as readonly string[]).includes(c))).toEqual([]);
  });
});

describe('toCurrentEventLine (the current-server shape)', () => {
  it('writes one field per current column: DateTime64 text for the times, no *_ms columns, empty Segment fields', () => {
    const fields = toCurrentEventLine(record, 1_767_225_602_009).split('\t');
    expect(fields).toHaveLength(CURRENT_EVENT_COLUMNS.length);
    expect(Object.fromEntries(CURRENT_EVENT_COLUMNS.map((column, i) => [column, fields[i]]))).toEqual({
      account_id: 'acc_1',
      event_id: 'evt\\twith\\ttabs\\\\and\\nnewline\\r',
      event_name: 'Signed Up',
      email: 'ada@example.com',
      domain: '',
      event_time: '2026-01-01 00:00:00.123',
      received_at: '2026-01-01 00:00:01.456',
      properties: expect.any(String) as unknown,
      source: 'bulk',
      job_id: '01a211fd-2953-7229-b23a-2afa2ed12a4c',
      user_id: '',
      anonymous_id: '',
      context: '',
      inserted_at: '2026-01-01 00:00:02.009',
    });
    expect(JSON.parse(unescape(fields[CURRENT_EVENT_COLUMNS.indexOf('properties')] ?? ''))).toEqual(record.properties);
  });

  it("writes the Segment-compatible intake's userId, anonymousId and context (JSON text), escaped", () => {
    const segment = { ...record, userId: 'user\t1', anonymousId: 'anon\n2', context: { ip: '203.0.113.9', page: { title: 'a\tb' } } } as EventRecord;
    const fields = toCurrentEventLine(segment, 0).split('\t').map(unescape);
    expect(fields[CURRENT_EVENT_COLUMNS.indexOf('user_id')]).toBe('user\t1');
    expect(fields[CURRENT_EVENT_COLUMNS.indexOf('anonymous_id')]).toBe('anon\n2');
    expect(JSON.parse(fields[CURRENT_EVENT_COLUMNS.indexOf('context')] ?? '')).toEqual(segment.context);
    expect(eventsRowFormatOfLine(toCurrentEventLine(segment, 0))).toBe(EVENTS_ROW_FORMATS.current);
  });

  it('keeps the milliseconds at both ends of the record time range, and tracks a changing inserted_at', () => {
    const first = toCurrentEventLine({ ...record, timestampMs: 0, receivedAtMs: Date.UTC(2100, 0, 1) - 1 }, 5).split('\t');
    expect(first[CURRENT_EVENT_COLUMNS.indexOf('event_time')]).toBe('1970-01-01 00:00:00.000');
    expect(first[CURRENT_EVENT_COLUMNS.indexOf('received_at')]).toBe('2099-12-31 23:59:59.999');
    expect(first[CURRENT_EVENT_COLUMNS.indexOf('inserted_at')]).toBe('1970-01-01 00:00:00.005');
    const second = toCurrentEventLine(record, 6).split('\t');
    expect(second[CURRENT_EVENT_COLUMNS.indexOf('inserted_at')]).toBe('1970-01-01 00:00:00.006');
  });

  it('escapes text like the legacy line does, field for field', () => {
    const legacy = toEventLine(record, 0).split('\t');
    const current = toCurrentEventLine(record, 0).split('\t');
    for (const column of [
      'account_id',
      'event_id',
      'event_name',
      'email',
      'domain',
      'properties',
      'source',
      'job_id',
      'user_id',
      'anonymous_id',
      'context',
    ] as const) {
      expect(current[CURRENT_EVENT_COLUMNS.indexOf(column)], column).toBe(legacy[EVENT_COLUMNS.indexOf(column)]);
    }
  });

  it('reads back through fromEventRow with the *_ms columns the server computes', () => {
    const fields = toCurrentEventLine(record, 0).split('\t').map(unescape);
    const row = Object.fromEntries(CURRENT_EVENT_COLUMNS.map((column, i) => [column, fields[i]])) as Record<string, string>;
    const ms = (text: string) => String(Date.parse(`${text.replace(' ', 'T')}Z`));
    const back = fromEventRow({ ...(row as unknown as EventRowOut), event_time_ms: ms(row.event_time ?? ''), received_at_ms: ms(row.received_at ?? '') });
    expect(back).toMatchObject({ eventId: record.eventId, timestampMs: record.timestampMs, receivedAtMs: record.receivedAtMs, properties: record.properties });
  });
});

describe('the shape of an events table and of a line', () => {
  it('tells the current shape by its DateTime64 event_time, and anything else as legacy', () => {
    expect(eventsShapeOf([{ name: 'event_time', type: "DateTime64(3, 'UTC')" }])).toBe('current');
    expect(eventsShapeOf([{ name: 'event_time', type: "DateTime('UTC')" }])).toBe('legacy');
    expect(eventsShapeOf([])).toBe('legacy');
  });

  it('tells the format of a line by its field count, whatever its text holds', () => {
    const hostile = { ...record, eventName: 'a\tb\tc\td', properties: { 'k\t': 'v\t\t' } };
    expect(eventsRowFormatOfLine(toEventLine(hostile, 0))).toBe(EVENTS_ROW_FORMATS.legacy);
    expect(eventsRowFormatOfLine(toCurrentEventLine(hostile, 0))).toBe(EVENTS_ROW_FORMATS.current);
    expect(EVENTS_ROW_FORMATS.current.line(record, 0)).toBe(toCurrentEventLine(record, 0));
    expect(EVENTS_ROW_FORMATS.legacy.line(record, 0)).toBe(toEventLine(record, 0));
    expect(eventsRowFormatOfLine(toEventLineBeforePersonIds(hostile, 0))).toBe(LEGACY_BEFORE_PERSON_IDS_FORMAT);
  });

  it('writes the person columns only into a table that has them (a legacy table before 0007 gets the 13 columns of 0001)', () => {
    const legacy = [{ name: 'event_time', type: "DateTime('UTC')" }];
    expect(eventsRowFormatOf(legacy)).toBe(LEGACY_BEFORE_PERSON_IDS_FORMAT);
    expect(eventsRowFormatOf([...legacy, { name: 'user_id', type: 'String' }])).toBe(EVENTS_ROW_FORMATS.legacy);
    expect(
      eventsRowFormatOf([
        { name: 'event_time', type: "DateTime64(3, 'UTC')" },
        { name: 'user_id', type: 'String' },
      ]),
    ).toBe(EVENTS_ROW_FORMATS.current);
  });
});

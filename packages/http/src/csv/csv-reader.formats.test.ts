import { describe, expect, it } from 'vitest';
import { delimiterFromField } from './csv-delimiter.js';
import { problemOf, read } from './csv.fixture.js';

/** CSV as people export it: other delimiters, header names for humans, epoch and zone-less times (docs/api.md, "CSV"). */
describe('readCsvEvents: delimiters', () => {
  it('detects a semicolon file (European spreadsheet locales), quoted semicolons and ;;; blank rows included', async () => {
    const csv = ['event_name;timestamp;email;amount', 'signup;2026-01-01T00:00:00Z;a@x.io;"1,5"', ';;;', 'login;2026-01-02T00:00:00Z;b@x.io;"a;b"'].join(
      '\r\n',
    );
    const { result, items } = await read(csv);
    expect(result).toMatchObject({ delimiter: 'semicolon', totalRows: 2, columns: ['event_name', 'timestamp', 'email', 'amount'] });
    expect(items.map((i) => [i.row, i.event])).toEqual([
      [2, expect.objectContaining({ eventName: 'signup', email: 'a@x.io', properties: { amount: '1,5' } })],
      [4, expect.objectContaining({ eventName: 'login', email: 'b@x.io', properties: { amount: 'a;b' } })],
    ]);
  });

  it('detects a tab-separated file', async () => {
    const { result, items } = await read('Event Name\tTimestamp\tDomain\nsignup\t2026-01-01T00:00:00Z\tacme.io\n');
    expect(result.delimiter).toBe('tab');
    expect(items[0]?.event).toMatchObject({ eventName: 'signup', domain: 'acme.io' });
  });

  it('prefers the delimiter that finds the spec columns, and takes the delimiter form field over detection', async () => {
    // Split on commas this header has 5 fields, on semicolons 4, but only the semicolons name columns.
    const detected = await read('event_name;timestamp;email;a,b,c,d,e\nsignup;2026-01-01T00:00:00Z;a@x.io;x\n');
    expect(detected.result.delimiter).toBe('semicolon');
    // Told it is a comma file, the semicolon header is one column: the field is not second-guessed.
    const told = await problemOf(read('event_name;timestamp;email\nsignup;2026-01-01T00:00:00Z;a@x.io\n', { delimiter: delimiterFromField(',') }));
    expect(told.errors?.map((e) => e.code)).toEqual(['missing_column', 'missing_column', 'missing_column']);
    const tab = await read('event_name\ttimestamp\temail\nsignup\t2026-01-01T00:00:00Z\ta@x.io\n', { delimiter: delimiterFromField('tab') });
    expect(tab.result.delimiter).toBe('tab');
  });

  it('names the delimiters tried when none can be detected', async () => {
    for (const header of ['event name timestamp email', 'a,b;c']) {
      const problem = await problemOf(read(`${header}\nx\n`));
      expect(problem.errors, header).toEqual([
        { row: 1, code: 'unknown_delimiter', message: 'no delimiter splits the header into the expected columns; tried comma (,), semicolon (;), tab (\\t)' },
      ]);
      expect(problem.message).toContain('form field delimiter');
    }
  });

  it('reads the delimiter form field by character or name, and refuses anything else naming the field', async () => {
    expect([',', ';', '\t', 'comma', 'Semicolon', 'tab', '\\t'].map((v) => delimiterFromField(v).name)).toEqual([
      'comma',
      'semicolon',
      'tab',
      'comma',
      'semicolon',
      'tab',
      'tab',
    ]);
    expect(() => delimiterFromField('|')).toThrow(
      expect.objectContaining({ errors: [expect.objectContaining({ field: 'delimiter', code: 'invalid_value' })] }),
    );
  });
});

describe('readCsvEvents: header names', () => {
  it('maps names that differ from the spec only in case, spaces or underscores; other columns stay properties as written', async () => {
    const { result, items } = await read('Event Name,TIMESTAMP,E mail,Event_ID,Plan Name\nsignup,2026-01-01T00:00:00Z,a@x.io,e1,pro\n');
    expect(result.columns).toEqual(['Event Name', 'TIMESTAMP', 'E mail', 'Event_ID', 'Plan Name']);
    expect(items[0]?.event).toEqual({
      eventName: 'signup',
      timestamp: '2026-01-01T00:00:00Z',
      email: 'a@x.io',
      eventId: 'e1',
      properties: { 'Plan Name': 'pro' },
    });
  });

  it('refuses two columns that both read as event_name, naming both', async () => {
    const problem = await problemOf(read('Event Name,timestamp,email,event_name\nsignup,2026-01-01T00:00:00Z,a@x.io,x\n'));
    expect(problem.errors).toEqual([
      {
        row: 1,
        column: 'event_name',
        code: 'ambiguous_column',
        message: 'columns 1 “Event Name” and 4 “event_name” both read as event_name; keep one of them',
      },
    ]);
  });

  it('suggests the spec name for a near miss of a missing column', async () => {
    const problem = await problemOf(read('evnt_name;Date;mail\nsignup;2026-01-01T00:00:00Z;a@x.io\n'));
    expect(problem.errors?.map((e) => e.message)).toEqual([
      'the header has no event_name column; did you mean “evnt_name”? Rename it to event_name',
      'the header has no timestamp column; did you mean “Date”? Rename it to timestamp',
      'the header needs an email or a domain column (or both); did you mean “mail”? Rename it to email',
    ]);
  });
});

describe('readCsvEvents: timestamps', () => {
  const file = (...times: string[]) => ['event_name,timestamp,email', ...times.map((t, i) => `e${i},${t},a@x.io`)].join('\n');

  it('accepts epoch seconds (with a fraction) and milliseconds; leaves other numbers to the event rules', async () => {
    const { items } = await read(file('1767225600', '1767225600.25', '1767225600123', '17672256001', '2026'));
    expect(items.map((i) => (i.event as { timestamp: string }).timestamp)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.250Z',
      '2026-01-01T00:00:00.123Z',
      '17672256001',
      '2026',
    ]);
  });

  it('rejects a zone-less time row by row with a hint, without a timezone form field', async () => {
    const { items } = await read(file('2026-01-01 00:00:00', '2026-01-01T00:00:00Z'));
    expect(items[0]).toMatchObject({
      row: 2,
      event: null,
      error: {
        code: 'invalid_format',
        column: 'timestamp',
        message: expect.stringContaining('send the form field timezone (e.g. timezone=Europe/Berlin, before the file part)'),
      },
    });
    expect(items[1]?.event).toMatchObject({ timestamp: '2026-01-01T00:00:00Z' });
  });

  it('reads zone-less times in the timezone form field, daylight saving included', async () => {
    const { items } = await read(file('2026-01-01 00:00:00', '2026-07-01T12:30:00.5', '2026-03-29 02:30:00', '2026-10-25 02:30:00', '2026-02-30 10:00:00'), {
      timezone: 'Europe/Berlin',
    });
    expect(items.map((i) => (i.event as { timestamp: string } | null)?.timestamp ?? i.error?.message)).toEqual([
      '2025-12-31T23:00:00.000Z',
      '2026-07-01T10:30:00.500Z',
      // 02:30 does not exist that night (clocks jump 02:00 → 03:00): moved forward by the gap.
      '2026-03-29T01:30:00.000Z',
      // 02:30 happens twice (03:00 → 02:00): the later instant, winter time (Luxon's rule).
      '2026-10-25T01:30:00.000Z',
      'is not a real calendar date and time',
    ]);
  });

  it('derives other ids for the same zone-less file read in another zone, and the same ids without the field', async () => {
    const csv = file('2026-01-01T00:00:00Z');
    const ids = async (timezone?: string) => (await read(csv, timezone ? { timezone } : {})).items.map((i) => (i.event as { eventId: string }).eventId);
    expect(await ids()).toEqual(await ids());
    expect(await ids('UTC')).not.toEqual(await ids());
    expect(await ids('UTC')).not.toEqual(await ids('Europe/Berlin'));
  });
});

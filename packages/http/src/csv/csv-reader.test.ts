import { type JobChunkItem, MAX_PROPERTIES } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { MAX_CSV_COLUMNS } from './csv-header.js';
import { ACCOUNT, idOf, lazyRows, problemOf, read, TS } from './csv.fixture.js';

describe('readCsvEvents: rows become job chunk items', () => {
  it('maps a normal file into ordered chunks of chunkSize with exact items', async () => {
    const csv = [
      'event_name,timestamp,email,domain',
      `signup,${TS},a@x.io,`,
      `login,${TS},,acme.io`,
      `login,${TS},b@x.io,b.io`,
      `logout,${TS},c@x.io,`,
      `signup,${TS},d@x.io,`,
    ].join('\n');
    const { result, chunks } = await read(csv, { chunkSize: 2 });

    expect(result).toEqual({ totalRows: 5, columns: ['event_name', 'timestamp', 'email', 'domain'], chunks: 3, delimiter: 'comma' });
    expect(chunks.map((c) => [c.seq, c.items.length])).toEqual([
      [0, 2],
      [1, 2],
      [2, 1],
    ]);
    expect(chunks[0]?.items).toEqual([
      { index: 0, row: 2, event: { eventName: 'signup', timestamp: TS, email: 'a@x.io', eventId: idOf(['signup', TS, 'a@x.io', '']), properties: {} } },
      { index: 1, row: 3, event: { eventName: 'login', timestamp: TS, domain: 'acme.io', eventId: idOf(['login', TS, '', 'acme.io']), properties: {} } },
    ]);
    expect(chunks[1]?.items.map((i) => [i.index, i.row])).toEqual([
      [2, 4],
      [3, 5],
    ]);
    expect(chunks[2]?.items).toEqual([
      { index: 4, row: 6, event: { eventName: 'signup', timestamp: TS, email: 'd@x.io', eventId: idOf(['signup', TS, 'd@x.io', '']), properties: {} } },
    ]);
  });

  it('strips a UTF-8 byte order mark and reads CRLF line ends', async () => {
    const csv = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`event_name,timestamp,email\r\nsignup,${TS},a@x.io\r\nlogin,${TS},b@x.io\r\n`)]);
    const { result, items } = await read(csv);

    expect(result.columns).toEqual(['event_name', 'timestamp', 'email']);
    expect(items.map((i) => [i.row, i.event])).toEqual([
      [2, { eventName: 'signup', timestamp: TS, email: 'a@x.io', eventId: idOf(['signup', TS, 'a@x.io']), properties: {} }],
      [3, { eventName: 'login', timestamp: TS, email: 'b@x.io', eventId: idOf(['login', TS, 'b@x.io']), properties: {} }],
    ]);
  });

  it('reads quoted commas, doubled quotes and line breaks; row counts records, not lines', async () => {
    const csv = [
      'event_name,timestamp,email,note',
      `"sign,up",${TS},a@x.io,"he said ""hi"""`,
      `multi,${TS},b@x.io,"line 1\nline 2\r\nline 3"`,
      `after,${TS},c@x.io,"x"`,
      `last,${TS},d@x.io,5" screen`,
    ].join('\r\n');
    const { items } = await read(csv);

    expect(items.map((i) => [i.index, i.row, (i.event as { eventName: string }).eventName])).toEqual([
      [0, 2, 'sign,up'],
      [1, 3, 'multi'],
      [2, 4, 'after'],
      [3, 5, 'last'],
    ]);
    expect(items.map((i) => (i.event as { properties: object }).properties)).toEqual([
      { note: 'he said "hi"' },
      { note: 'line 1\nline 2\r\nline 3' },
      { note: 'x' },
      { note: '5" screen' },
    ]);
  });

  it('turns other columns into string properties, leaving empty cells and empty identity out', async () => {
    const csv = `event_name, timestamp ,email,domain,plan,seats,empty\nsignup,${TS},,acme.io,pro,12,\nsignup,${TS},a@x.io,,,0,\n`;
    const { result, items } = await read(csv);

    expect(result.columns).toEqual(['event_name', 'timestamp', 'email', 'domain', 'plan', 'seats', 'empty']);
    expect(items.map((i) => i.event)).toEqual([
      {
        eventName: 'signup',
        timestamp: TS,
        domain: 'acme.io',
        eventId: idOf(['signup', TS, '', 'acme.io', 'pro', '12', '']),
        properties: { plan: 'pro', seats: '12' },
      },
      { eventName: 'signup', timestamp: TS, email: 'a@x.io', eventId: idOf(['signup', TS, 'a@x.io', '', '', '0', '']), properties: { seats: '0' } },
    ]);
  });

  it('keeps cells verbatim: spaces, and spreadsheet formulas are data', async () => {
    const csv = `event_name,timestamp,email,f1,f2,f3\n=HYPERLINK("http://evil.example";"x"),${TS}, a@x.io ,+cmd|' /C calc'!A0,@SUM(A1:A2),"=1+1"\n`;
    const { items } = await read(csv);

    expect(items[0]?.event).toMatchObject({
      eventName: '=HYPERLINK("http://evil.example";"x")',
      email: ' a@x.io ',
      properties: { f1: "+cmd|' /C calc'!A0", f2: '@SUM(A1:A2)', f3: '=1+1' },
    });
  });

  it('uses a non-empty event_id cell as the id and keeps it out of the properties', async () => {
    const csv = `event_id,event_name,timestamp,email,plan\nmy-id-1,signup,${TS},a@x.io,pro\n,signup,${TS},a@x.io,pro\n`;
    const { items } = await read(csv);

    expect(items.map((i) => i.event)).toEqual([
      { eventName: 'signup', timestamp: TS, email: 'a@x.io', eventId: 'my-id-1', properties: { plan: 'pro' } },
      { eventName: 'signup', timestamp: TS, email: 'a@x.io', eventId: idOf(['', 'signup', TS, 'a@x.io', 'pro']), properties: { plan: 'pro' } },
    ]);
  });

  it('derives ids deterministically: same file same ids, identical rows distinct, other account other ids', async () => {
    const csv = `event_name,timestamp,email\nsignup,${TS},a@x.io\nsignup,${TS},a@x.io\nlogin,${TS},a@x.io\nsignup,${TS},a@x.io\n`;
    const idsOf = async (accountId: string) => (await read(csv, { accountId })).items.map((i) => (i.event as { eventId: string }).eventId);
    const first = await idsOf(ACCOUNT);
    const cells = ['signup', TS, 'a@x.io'];

    expect(first).toEqual([idOf(cells, 0), idOf(cells, 1), idOf(['login', TS, 'a@x.io']), idOf(cells, 2)]);
    expect(new Set(first).size).toBe(4);
    expect(await idsOf(ACCOUNT)).toEqual(first);
    const other = await idsOf('acc_2');
    expect(other[0]).toBe(idOf(cells, 0, 'acc_2'));
    expect(other.filter((id) => first.includes(id))).toEqual([]);
  });

  it('keeps a __proto__ column as a property key for the job to refuse', async () => {
    const { items } = await read(`event_name,timestamp,email,__proto__\nsignup,${TS},a@x.io,polluted\n`);
    const properties = (items[0]?.event as { properties: Record<string, string> } | undefined)?.properties ?? {};

    expect(Object.keys(properties)).toEqual(['__proto__']);
    expect(JSON.parse(JSON.stringify(properties))).toEqual(JSON.parse('{"__proto__":"polluted"}'));
  });
});

describe('readCsvEvents: row problems are items, the file goes on', () => {
  it('turns a row with too few or too many cells into an item with an error', async () => {
    const csv = `event_name,timestamp,email\nsignup,${TS}\nsignup,${TS},a@x.io,extra\nlogin,${TS},b@x.io\n`;
    const { result, items } = await read(csv);

    expect(result.totalRows).toBe(3);
    expect(items).toEqual([
      { index: 0, row: 2, event: null, error: { code: 'column_count', message: 'expected 3 cells, found 2' } },
      { index: 1, row: 3, event: null, error: { code: 'column_count', message: 'expected 3 cells, found 4' } },
      { index: 2, row: 4, event: { eventName: 'login', timestamp: TS, email: 'b@x.io', eventId: idOf(['login', TS, 'b@x.io']), properties: {} } },
    ]);
  });

  it('rejects a row larger than 1 MiB on its own without holding it', async () => {
    const big = 'x'.repeat(1024 * 1024 + 1);
    const { items } = await read(`event_name,timestamp,email,note\nsignup,${TS},a@x.io,${big}\nlogin,${TS},b@x.io,ok\n`);

    expect(items.map((i) => [i.index, i.row, i.error?.code ?? null])).toEqual([
      [0, 2, 'row_too_large'],
      [1, 3, null],
    ]);
    expect(items[0]?.event).toBeNull();
  });
});

describe('readCsvEvents: header problems fail the file before any chunk', () => {
  const cases: [string, string, object[]][] = [
    ['no event_name', 'timestamp,email', [{ row: 1, column: 'event_name', code: 'missing_column', message: 'the header has no event_name column' }]],
    ['no timestamp', 'event_name,domain', [{ row: 1, column: 'timestamp', code: 'missing_column', message: 'the header has no timestamp column' }]],
    [
      'neither email nor domain',
      'event_name,timestamp,plan',
      [{ row: 1, column: 'email|domain', code: 'missing_column', message: 'the header needs an email or a domain column (or both)' }],
    ],
    [
      'a duplicate name after trimming',
      'event_name,timestamp,email, email ,email',
      [{ row: 1, column: 'email', code: 'duplicate_column', message: 'the column name “email” appears 3 times (columns 3, 4, 5)' }],
    ],
    ['an empty name', 'event_name,timestamp,email,', [{ row: 1, column: '#4', code: 'empty_column_name', message: 'column 4 has no name' }]],
    [
      'several problems at once',
      ' ,event_name,plan,plan,"  "',
      [
        { row: 1, column: 'timestamp', code: 'missing_column', message: 'the header has no timestamp column' },
        { row: 1, column: 'email|domain', code: 'missing_column', message: 'the header needs an email or a domain column (or both)' },
        { row: 1, column: 'plan', code: 'duplicate_column', message: 'the column name “plan” appears 2 times (columns 3, 4)' },
        { row: 1, column: '#1', code: 'empty_column_name', message: 'column 1 has no name' },
        { row: 1, column: '#5', code: 'empty_column_name', message: 'column 5 has no name' },
      ],
    ],
  ];

  it.each(cases)('%s', async (_name, header, errors) => {
    const chunks: number[] = [];
    const problem = await problemOf(read(`${header}\nsignup,${TS},a@x.io,x,y\n`, { chunkSize: 1, onChunk: async (_items, seq) => void chunks.push(seq) }));

    expect(problem.kind).toBe('validation');
    expect(problem.errors).toEqual(errors);
    expect(chunks).toEqual([]);
  });

  it('accepts the widest header the spec allows: the mapped columns and 50 properties', async () => {
    const properties = Array.from({ length: MAX_PROPERTIES }, (_, i) => `p${i}`);
    const header = ['event_name', 'timestamp', 'email', 'domain', 'event_id', ...properties];
    expect(header).toHaveLength(MAX_CSV_COLUMNS);
    const { items } = await read(`${header.join(',')}\nsignup,${TS},a@x.io,,e-1,${properties.map(() => 'v').join(',')}\n`);
    expect(Object.keys(items[0]?.event as object)).toContain('properties');
    expect(Object.keys((items[0]?.event as { properties: object }).properties)).toHaveLength(MAX_PROPERTIES);
  });

  it('refuses a header wider than that with one error, however wide it is', async () => {
    for (const width of [MAX_CSV_COLUMNS + 1, 200_000]) {
      const header = ['event_name', 'timestamp', 'email', ...Array.from({ length: width - 3 }, () => '')].join(',');
      const problem = await problemOf(read(`${header}\nsignup,${TS},a@x.io\n`));
      expect(problem.errors).toEqual([
        {
          row: 1,
          code: 'too_many_columns',
          message: `the header has ${width} columns; at most ${MAX_CSV_COLUMNS} are allowed (event_name, timestamp, email, domain, event_id and 50 properties)`,
        },
      ]);
      expect(problem.errorsTotal).toBe(1);
    }
  });

  it('refuses a header-only file (no_rows) and an empty file (empty_file)', async () => {
    const headerOnly = await problemOf(read('event_name,timestamp,email\r\n'));
    expect(headerOnly.errors).toEqual([{ row: 2, code: 'no_rows', message: 'the file has no data rows after the header' }]);

    for (const empty of ['', '\uFEFF', '\n\r\n  \n,,\n']) {
      const problem = await problemOf(read(empty));
      expect(problem.errors).toEqual([{ row: 1, code: 'empty_file', message: 'the file has no header row' }]);
    }
  });
});

describe('readCsvEvents: the file-level limits', () => {
  it('fails on data row maxRows + 1 after delivering only the chunks before it, and stops reading', async () => {
    const { stream, source } = lazyRows('event_name,timestamp,email', 1000, (i) => `e${i},${TS},a@x.io`);
    const chunks: JobChunkItem[][] = [];
    const problem = await problemOf(read(stream, { maxRows: 3, chunkSize: 2, onChunk: async (items) => void chunks.push(items) }));

    expect(problem.errors).toEqual([{ row: 5, code: 'too_many_rows', message: 'data row 4: at most 3 data rows are allowed' }]);
    expect(problem.detail).toBe('The file has more than 3 data rows; split it into files of at most 3 rows.');
    expect(chunks.map((items) => items.map((i) => i.row))).toEqual([[2, 3]]);
    expect(source.produced).toBeLessThan(100);
    expect(stream.destroyed).toBe(true);
  });

  it('accepts exactly maxRows data rows', async () => {
    const { result } = await read(`event_name,timestamp,email\na,${TS},x\nb,${TS},x\nc,${TS},x\n`, { maxRows: 3 });
    expect(result.totalRows).toBe(3);
  });

  it('streams 10,000 rows through without reading the whole file first', async () => {
    const { stream, source } = lazyRows('event_name,timestamp,email,n', 10_000, (i) => `signup,${TS},u${i}@x.io,${i}`);
    let producedAtFirstChunk = -1;
    const sizes: number[] = [];
    let last: JobChunkItem | undefined;
    const { result } = await read(stream, {
      onChunk: async (items, seq) => {
        if (seq === 0) producedAtFirstChunk = source.produced;
        sizes.push(items.length);
        last = items.at(-1);
      },
    });

    expect(result).toEqual({ totalRows: 10_000, columns: ['event_name', 'timestamp', 'email', 'n'], chunks: 20, delimiter: 'comma' });
    expect(sizes).toEqual(Array(20).fill(500));
    expect(last).toMatchObject({ index: 9999, row: 10_001, event: { email: 'u9999@x.io', properties: { n: '9999' } } });
    // The first chunk went out long before the source was drained (read-ahead is small).
    expect(producedAtFirstChunk).toBeLessThan(2000);
  });
});

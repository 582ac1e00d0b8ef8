import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { JobChunkItem } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { readCsvEvents } from './csv-reader.js';
import { ACCOUNT, idOf, problemOf, read, TS } from './csv.fixture.js';

const HEADER = 'event_name,timestamp,email';

describe('readCsvEvents: CSV that cannot be read fails the file with its row', () => {
  it('reports an unclosed quote at the end of the file at the row where the quote opened', async () => {
    const csv = `${HEADER},note\nok,${TS},a@x.io,"two\nlines"\nbad,${TS},b@x.io,"never closed\nmore\n`;
    const problem = await problemOf(read(csv));

    expect(problem.kind).toBe('validation');
    expect(problem.errors).toEqual([{ row: 3, code: 'malformed_csv', message: 'a quoted field is not closed before the end of the file' }]);
    expect(problem.detail).toBe('The file is not valid CSV at row 3; nothing more was read.');
  });

  it('reports text after a closing quote at its exact row, rows before it in the same chunk included', async () => {
    const rows = Array.from({ length: 40 }, (_, i) => `e${i},${TS},a@x.io`);
    rows[29] = `"e29"x,${TS},a@x.io`;
    const chunks: number[] = [];
    const problem = await problemOf(read(`${HEADER}\n${rows.join('\n')}\n`, { chunkSize: 10, onChunk: async (_items, seq) => void chunks.push(seq) }));

    expect(problem.errors).toEqual([{ row: 31, code: 'malformed_csv', message: 'a closing quote must be followed by the delimiter or the end of the row' }]);
    expect(chunks).toEqual([0, 1]);
  });

  it('reports invalid UTF-8 (e.g. a Latin-1 export) at its row without echoing the bytes', async () => {
    const csv = Buffer.concat([Buffer.from(`${HEADER},city\nok,${TS},a@x.io,Z\u00fcrich\nbad,${TS},b@x.io,Z`), Buffer.from([0xfc]), Buffer.from('rich\n')]);
    const problem = await problemOf(read(csv));

    expect(problem.errors).toEqual([{ row: 3, code: 'malformed_csv', message: 'the row is not valid UTF-8; save the file as UTF-8' }]);
  });

  it('fails the file when an unclosed quote swallows more than 1 MiB, without holding it', async () => {
    const filler = `${'y'.repeat(1023)}\n`.repeat(1200);
    const problem = await problemOf(read(`${HEADER},note\nok,${TS},a@x.io,"open\n${filler}`));

    expect(problem.errors).toEqual([{ row: 2, code: 'malformed_csv', message: 'a quoted field is not closed before the end of the file' }]);
  });
});

describe('readCsvEvents: stream behaviour', () => {
  it('rethrows an error of the input stream unchanged', async () => {
    const failure = Object.assign(new Error('request file too large'), { code: 'FST_REQ_FILE_TOO_LARGE' });
    const input = Readable.from(
      (async function* () {
        yield `${HEADER}\nsignup,${TS},a@x.io\n`;
        throw failure;
      })(),
    );

    await expect(read(input)).rejects.toBe(failure);
  });

  it('rethrows an onChunk failure unchanged and delivers nothing after it', async () => {
    const failure = new Error('kafka unavailable');
    const seqs: number[] = [];
    const csv = `${HEADER}\n${Array.from({ length: 6 }, (_, i) => `e${i},${TS},a@x.io`).join('\n')}\n`;
    const onChunk = async (_items: JobChunkItem[], seq: number) => {
      seqs.push(seq);
      if (seq === 1) throw failure;
    };

    await expect(read(csv, { chunkSize: 2, onChunk })).rejects.toBe(failure);
    expect(seqs).toEqual([0, 1]);
  });

  it('reads nothing more and calls onChunk again only after the pending onChunk resolved', async () => {
    const lines = [`${HEADER}\n`, ...Array.from({ length: 30 }, (_, i) => `e${i},${TS},a@x.io\n`)];
    let reads = 0;
    // One line per read; a 1-byte high-water mark means the stream does not read ahead.
    const input = new Readable({
      highWaterMark: 1,
      read() {
        reads += 1;
        this.push(lines.shift() ?? null);
      },
    });
    let pending = false;
    const readsWhilePending: number[] = [];
    const seqs: number[] = [];
    const onChunk = async (_items: JobChunkItem[], seq: number) => {
      expect(pending).toBe(false);
      pending = true;
      seqs.push(seq);
      const before = reads;
      await sleep(15);
      readsWhilePending.push(reads - before);
      pending = false;
    };

    const { result } = await read(input, { chunkSize: 4, onChunk });

    expect(result.totalRows).toBe(30);
    expect(seqs).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(Math.max(...readsWhilePending)).toBeLessThanOrEqual(1);
  });

  it('gives the same items whatever the chunk boundaries (BOM, CRLF, lone CR, quotes, UTF-8 split)', async () => {
    const text = `\uFEFF${HEADER},note\r\nsignup,${TS},a@x.io,"Z\u00fcrich, ""quoted""\r\nand more"\r\nlogin,${TS},b@x.io,\u00e9\rlast,${TS},c@x.io,"x"\r\n`;
    const bytes = Buffer.from(text, 'utf8');
    const whole = await read(bytes);
    const byteByByte = await read(Readable.from(Array.from(bytes, (b) => Buffer.from([b]))));

    expect(whole.items.map((i) => [i.row, i.event])).toEqual([
      [
        2,
        {
          eventName: 'signup',
          timestamp: TS,
          email: 'a@x.io',
          eventId: idOf(['signup', TS, 'a@x.io', 'Z\u00fcrich, "quoted"\r\nand more']),
          properties: { note: 'Z\u00fcrich, "quoted"\r\nand more' },
        },
      ],
      [3, { eventName: 'login', timestamp: TS, email: 'b@x.io', eventId: idOf(['login', TS, 'b@x.io', '\u00e9']), properties: { note: '\u00e9' } }],
      [4, { eventName: 'last', timestamp: TS, email: 'c@x.io', eventId: idOf(['last', TS, 'c@x.io', 'x']), properties: { note: 'x' } }],
    ]);
    expect(byteByByte.items).toEqual(whole.items);
    expect(byteByByte.result).toEqual(whole.result);
  });

  it('skips blank records (empty lines, spreadsheet ,,, rows) but counts them in row numbers', async () => {
    const csv = `\n${HEADER}\n\nsignup,${TS},a@x.io\n,,\n  \t\r\n"",,\nlogin,${TS},b@x.io\n\n\n`;
    const { result, items } = await read(csv);

    expect(result.totalRows).toBe(3);
    expect(items.map((i) => [i.index, i.row, i.error?.code ?? (i.event as { eventName: string }).eventName])).toEqual([
      [0, 4, 'signup'],
      [1, 7, ''],
      [2, 8, 'login'],
    ]);
    expect(items[1]?.event).toEqual({ eventName: '', timestamp: '', eventId: idOf(['', '', '']), properties: {} });
  });

  it('reports header problems at the header row when blank lines precede it', async () => {
    const problem = await problemOf(read(`\n\nevent_name,email\nsignup,a@x.io\n`));
    expect(problem.errors).toEqual([{ row: 3, column: 'timestamp', code: 'missing_column', message: 'the header has no timestamp column' }]);
  });

  it('accepts string chunks from an object-mode stream', async () => {
    const { items } = await read(Readable.from([`${HEADER}\nsig`, `nup,${TS},a@x.io`]));
    expect(items).toEqual([
      { index: 0, row: 2, event: { eventName: 'signup', timestamp: TS, email: 'a@x.io', eventId: idOf(['signup', TS, 'a@x.io']), properties: {} } },
    ]);
  });

  it('refuses a chunkSize that is not a positive integer', async () => {
    await expect(readCsvEvents(Readable.from(['']), { accountId: ACCOUNT, maxRows: 1, chunkSize: 0, onChunk: async () => {} })).rejects.toThrow(RangeError);
  });
});

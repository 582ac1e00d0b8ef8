import type { Readable } from 'node:stream';
import type { JobChunkItem } from '@ingest/schemas';
import { ProblemError } from '../http/problem.js';
import { type CellProblem, CsvCellReader } from './csv-cells.js';
import { type CsvDelimiter, detectDelimiter } from './csv-delimiter.js';
import { countFields, type CsvHeader, MAX_CSV_COLUMNS, readHeader, tooManyColumns } from './csv-header.js';
import { type CsvRecord, CsvRecordSplitter } from './csv-records.js';
import { CsvEventMapper } from './csv-row.js';

/**
 * A record longer than this is not kept. It is the `/v1/events` body limit: no single event
 * can be larger through the API either. Such a row is rejected on its own (the job reports it);
 * if it is an unclosed quote swallowing the rest of the file, the file fails as malformed.
 */
export const MAX_RECORD_BYTES = 1024 * 1024;

export interface CsvReadOptions {
  /** For deterministic event ids. */
  accountId: string;
  /** At most this many data rows (10,000); one more fails the file. */
  maxRows: number;
  /** Items per onChunk call (JOB_CHUNK_SIZE). */
  chunkSize: number;
  /** seq 0, 1, 2, ...; called in order and awaited: nothing more is read while it is pending. */
  onChunk(items: JobChunkItem[], seq: number): Promise<void>;
  /** Every byte of the file as read, in order (the Idempotency-Key's body digest). */
  onBytes?(bytes: Buffer): void;
  /** Called after each record; a promise it returns is awaited (TimeSlicer: take turns with other uploads). */
  pace?: () => Promise<void> | undefined;
  /** The `delimiter` form field; without it the delimiter is detected from the header (csv-delimiter.ts). */
  delimiter?: CsvDelimiter;
  /** The `timezone` form field: the IANA zone of timestamps written without one (csv-timestamp.ts). */
  timezone?: string;
}

export interface CsvReadResult {
  /** Data rows, i.e. items passed to onChunk (rows with a problem included). */
  totalRows: number;
  /** Header names, trimmed, in file order. */
  columns: string[];
  /** How many times onChunk was called. */
  chunks: number;
  /** The delimiter the file was read with. */
  delimiter: CsvDelimiter['name'];
}

const CELL_PROBLEMS: Record<CellProblem | 'unterminated_quote', string> = {
  invalid_utf8: 'the row is not valid UTF-8; save the file as UTF-8',
  unclosed_quote: 'a quoted field is not closed',
  unterminated_quote: 'a quoted field is not closed before the end of the file',
  text_after_quote: 'a closing quote must be followed by the delimiter or the end of the row',
};

/**
 * Streams a CSV upload into job chunk items. Row 1 is the header; each later record becomes
 * `{ index, row, event }`: `index` counts data rows from 0, `row` is the record number in the
 * file (not the physical line: a quoted line break does not start a new row; header = 1).
 * Completely empty records (nothing but spaces, tabs and commas: a blank line, or the `,,,` a
 * spreadsheet writes for an empty row) are ignored but still counted in `row`, so row numbers
 * match what a spreadsheet shows.
 *
 * A row with the wrong number of cells, or larger than MAX_RECORD_BYTES, is an item with
 * `event: null` and an `error`; the job rejects it and the rest of the file goes on.
 * A bad header, no header, no data rows, more than `maxRows` data rows, or CSV/UTF-8 that
 * cannot be read throws a 'validation' ProblemError with `row`-numbered errors; header problems
 * always throw before the first onChunk. On any throw reading stops (a Readable input is
 * destroyed); chunks already delivered stay delivered. An error of `input` or of `onChunk` is
 * rethrown unchanged. The file is never held whole: one record and one chunk at a time.
 */
export async function readCsvEvents(input: NodeJS.ReadableStream | Readable, options: CsvReadOptions): Promise<CsvReadResult> {
  if (!Number.isInteger(options.chunkSize) || options.chunkSize < 1) throw new RangeError('chunkSize must be a positive integer');
  const splitter = new CsvRecordSplitter(MAX_RECORD_BYTES, options.delimiter?.byte ?? null);
  // The splitter is lazy: the header's delimiter is set before it scans a byte of row 2.
  const reader = new CsvEventReader(options, (d) => splitter.setDelimiter(d.byte));
  try {
    const pace = options.pace ?? (() => undefined);
    for await (const chunk of input) {
      const bytes = toBuffer(chunk);
      options.onBytes?.(bytes);
      for (const record of splitter.push(bytes)) {
        await reader.handle(record);
        const turn = pace();
        if (turn) await turn;
      }
    }
    for (const record of splitter.end()) await reader.handle(record);
  } finally {
    reader.close();
  }
  return reader.finish();
}

/** The per-file state: header, mapper, the chunk being filled. */
class CsvEventReader {
  /** Made once the delimiter is known (fast-csv takes it as an option). */
  private cells: CsvCellReader | null = null;
  private delimiter: CsvDelimiter | null = null;
  private header: { header: CsvHeader; mapper: CsvEventMapper } | null = null;
  private items: JobChunkItem[] = [];
  private totalRows = 0;
  private seq = 0;

  constructor(
    private readonly options: CsvReadOptions,
    private readonly onDelimiter: (delimiter: CsvDelimiter) => void,
  ) {}

  async handle(record: CsvRecord): Promise<void> {
    if (this.header === null) {
      if (record.kind === 'record') {
        const delimiter = this.options.delimiter ?? detectDelimiter(record.bytes, record.row);
        this.delimiter = delimiter;
        this.cells = new CsvCellReader(delimiter.char);
        this.onDelimiter(delimiter);
        // Too wide is answered from a count of the bytes, before fast-csv splits the cells.
        const fields = countFields(record.bytes, delimiter.byte);
        if (fields > MAX_CSV_COLUMNS) throw tooManyColumns(record.row, fields);
      }
      const header = readHeader(await this.cellsOf(record), record.row);
      this.header = { header, mapper: new CsvEventMapper(header, this.options.accountId, this.options.timezone) };
      return;
    }
    const { header, mapper } = this.header;
    const { maxRows, chunkSize } = this.options;
    if (record.kind === 'unterminated_quote') throw malformed(record.row, CELL_PROBLEMS.unterminated_quote);
    if (this.totalRows === maxRows) throw tooManyRows(record.row, maxRows);
    const index = this.totalRows;
    const { row } = record;
    this.totalRows += 1;
    if (record.kind === 'too_large') {
      this.items.push({ index, row, event: null, error: { code: 'row_too_large', message: `the row is larger than ${MAX_RECORD_BYTES} bytes` } });
    } else {
      const cells = await this.cellsOf(record);
      const expected = header.names.length;
      this.items.push(
        cells.length === expected
          ? { index, row, ...mapper.toItem(cells) }
          : { index, row, event: null, error: { code: 'column_count', message: `expected ${expected} cells, found ${cells.length}` } },
      );
    }
    if (this.items.length === chunkSize) await this.flush();
  }

  /** After the last record: deliver the partial chunk, or say why there is nothing to deliver. */
  async finish(): Promise<CsvReadResult> {
    if (this.header === null) {
      throw new ProblemError('validation', 'The file is empty: it needs a header row and at least one data row.', {
        errors: [{ row: 1, code: 'empty_file', message: 'the file has no header row' }],
      });
    }
    const { names, row } = this.header.header;
    if (this.totalRows === 0) {
      throw new ProblemError('validation', 'The file has a header row but no data rows; nothing was queued.', {
        errors: [{ row: row + 1, code: 'no_rows', message: 'the file has no data rows after the header' }],
      });
    }
    if (this.items.length > 0) await this.flush();
    return { totalRows: this.totalRows, columns: names, chunks: this.seq, delimiter: this.delimiter?.name ?? 'comma' };
  }

  close(): void {
    this.cells?.close();
  }

  private async flush(): Promise<void> {
    const items = this.items;
    this.items = [];
    await this.options.onChunk(items, this.seq);
    this.seq += 1;
  }

  private async cellsOf(record: CsvRecord): Promise<string[]> {
    if (record.kind === 'too_large') throw tooLargeHeader(record.row);
    if (record.kind !== 'record') throw malformed(record.row, CELL_PROBLEMS[record.kind]);
    // Set by the header record, which is the first 'record' this reader sees.
    this.cells ??= new CsvCellReader(this.delimiter?.char);
    const result = await this.cells.read(record.bytes);
    if (!result.ok) throw malformed(record.row, CELL_PROBLEMS[result.problem]);
    return result.cells;
  }
}

function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  throw new TypeError('readCsvEvents: the input must yield bytes or strings');
}

function malformed(row: number, message: string): ProblemError {
  return new ProblemError('validation', `The file is not valid CSV at row ${row}; nothing more was read.`, {
    errors: [{ row, code: 'malformed_csv', message }],
  });
}

function tooManyRows(row: number, maxRows: number): ProblemError {
  return new ProblemError('validation', `The file has more than ${maxRows} data rows; split it into files of at most ${maxRows} rows.`, {
    errors: [{ row, code: 'too_many_rows', message: `data row ${maxRows + 1}: at most ${maxRows} data rows are allowed` }],
  });
}

function tooLargeHeader(row: number): ProblemError {
  return new ProblemError('validation', `The CSV header (row ${row}) is larger than ${MAX_RECORD_BYTES} bytes.`, {
    errors: [{ row, code: 'row_too_large', message: `the header row is larger than ${MAX_RECORD_BYTES} bytes` }],
  });
}

import { isUtf8 } from 'node:buffer';
import { type CsvParserStream, parse } from '@fast-csv/parse';

/** Why a record's cells could not be read; the messages never quote the file's content. */
export type CellProblem = 'invalid_utf8' | 'unclosed_quote' | 'text_after_quote';

export type CellResult = { ok: true; cells: string[] } | { ok: false; problem: CellProblem };

/**
 * Reads the cells of one whole record (see csv-records.ts) with fast-csv, which owns the
 * quoting rules: `""` escapes, line breaks inside quotes, spaces around a quoted field.
 *
 * One long-lived parser gets one record per write, so a parse error belongs to exactly that
 * record and the parser never holds an unfinished record. Options: no header handling and no
 * skipping of empty rows (the reader validates the header and the splitter already dropped
 * blank records: fast-csv must return exactly one row per record, which is checked), no trim
 * (cells are kept as written; only header names are trimmed, by the reader).
 *
 * Known fast-csv behaviour kept: a U+FEFF at the very start of a record is dropped (it strips a
 * byte order mark from every write), and a first cell of only spaces reads as empty.
 */
export class CsvCellReader {
  private readonly parser: CsvParserStream<string[], string[]>;
  private rows: string[][] = [];

  /** `delimiter`: one of csv-delimiter.ts's characters. */
  constructor(delimiter = ',') {
    this.parser = parse<string[], string[]>({ headers: false, ignoreEmpty: false, trim: false, delimiter });
    this.parser.on('data', (row: string[]) => this.rows.push(row));
    // Surfaced through the write callback; without a listener the error would be thrown.
    this.parser.on('error', () => {});
  }

  async read(record: Buffer): Promise<CellResult> {
    if (!isUtf8(record)) return { ok: false, problem: 'invalid_utf8' };
    this.rows = [];
    try {
      await new Promise<void>((resolve, reject) => {
        this.parser.write(`${record.toString('utf8')}\n`, (error) => (error ? reject(error) : resolve()));
      });
    } catch {
      // fast-csv's message quotes the data, so only the kind of problem is kept. Given a whole
      // record, the only thing it rejects is text after a closing quote (`"a"b`).
      return { ok: false, problem: 'text_after_quote' };
    }
    const [row, ...more] = this.rows;
    // No row: fast-csv saw an opening quote the splitter did not (see csv-records.ts) and waits
    // for its end. More than one cannot happen, as the splitter's quotes are a subset of its.
    if (row === undefined || more.length > 0) return { ok: false, problem: 'unclosed_quote' };
    return { ok: true, cells: row };
  }

  close(): void {
    this.parser.destroy();
  }
}

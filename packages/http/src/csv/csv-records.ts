/**
 * Cuts an uploaded CSV byte stream into whole records before any cell is parsed.
 *
 * Why not hand the stream straight to fast-csv: its stream parser re-scans the unfinished
 * record from its start on every incoming chunk, so one unclosed quote near the top of a 10 MB
 * file cost 72 s of blocked event loop (quadratic; a 50 MB upload would take far longer). It
 * also loses the position of a bad record inside a chunk, silently replaces invalid UTF-8 and
 * strips U+FEFF at chunk boundaries. Here the quote state is tracked once per byte, so the
 * work is linear, memory is bounded by `maxRecordBytes`, and every record knows its number.
 *
 * Working on bytes is safe because every structural character (`"`, the delimiter, CR, LF) is ASCII, and in
 * UTF-8 an ASCII byte never occurs inside a multi-byte character: a record boundary is never
 * in the middle of a character, so each record can be validated as UTF-8 on its own.
 *
 * The quote rules mirror fast-csv's (which then parses each record's cells): a field is quoted
 * when its first character other than space/tab is `"`; `""` inside quotes is a quote; a `"`
 * elsewhere in an unquoted field is an ordinary character; CRLF, LF and a lone CR end a record.
 * The one difference is that fast-csv also skips non-ASCII white space (e.g. NBSP) before an
 * opening quote; such a field is unquoted here, and if its quoted value held a line break
 * fast-csv sees an unclosed quote, which the reader reports as malformed: loud, never a
 * silently shifted row number.
 */

const QUOTE = 0x22;
const COMMA = 0x2c;
const SEMICOLON = 0x3b;
const TAB = 0x09;
const CR = 0x0d;
const LF = 0x0a;
const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/** Where the scanner is inside the current record. */
const FIELD_START = 0;
const UNQUOTED = 1;
const QUOTED = 2;
/** A `"` inside a quoted field: either the first half of `""` or the closing quote. */
const QUOTE_SEEN = 3;

/**
 * `row` is the record number in the file, 1-based: a record holding a quoted line break is
 * one row, and blank records (which are skipped) still count, so the number matches the row a
 * spreadsheet shows.
 */
export type CsvRecord =
  | { kind: 'record'; row: number; bytes: Buffer }
  /** Longer than the limit; its bytes were not kept. */
  | { kind: 'too_large'; row: number }
  /** The input ended inside a quoted field that starts on this row. */
  | { kind: 'unterminated_quote'; row: number };

/** Byte tables: which bytes end a field, and which leave a record blank (white space and the delimiter). */
function tables(delimiters: readonly number[]): { separator: Uint8Array; blank: Uint8Array } {
  const separator = new Uint8Array(256);
  const blank = new Uint8Array(256);
  for (const b of [0x20, 0x09, 0x0b, 0x0c]) blank[b] = 1;
  for (const d of delimiters) {
    separator[d] = 1;
    blank[d] = 1;
  }
  return { separator, blank };
}

export class CsvRecordSplitter {
  private state = FIELD_START;
  private parts: Buffer[] = [];
  private size = 0;
  private tooLarge = false;
  /** Only white space and commas so far (a spreadsheet's empty row is `,,,`). */
  private blank = true;
  /** The last record ended with CR: an LF at the start of the next chunk belongs to it. */
  private skipLF = false;
  /** The first bytes, held until we know whether they are a byte order mark. */
  private head: Buffer | null = Buffer.alloc(0);
  private row = 0;
  private table: { separator: Uint8Array; blank: Uint8Array };

  /**
   * `delimiter`: the byte that separates fields, or null while it is not known yet (the reader
   * detects it from the header): until `setDelimiter`, a comma, a semicolon and a tab each end
   * a field, which only matters for quotes in the header.
   */
  constructor(
    private readonly maxRecordBytes: number,
    delimiter: number | null = COMMA,
  ) {
    this.table = tables(delimiter === null ? [COMMA, SEMICOLON, TAB] : [delimiter]);
  }

  /** From the next byte on (records already returned are not read again). */
  setDelimiter(delimiter: number): void {
    this.table = tables([delimiter]);
  }

  /** Records completed by this chunk, in order; the unfinished tail is kept for the next call. */
  *push(chunk: Buffer): Generator<CsvRecord> {
    let buf = chunk;
    if (this.head !== null) {
      const head = Buffer.concat([this.head, chunk]);
      if (head.length < UTF8_BOM.length && UTF8_BOM.subarray(0, head.length).equals(head)) {
        this.head = head;
        return;
      }
      this.head = null;
      buf = head.subarray(0, UTF8_BOM.length).equals(UTF8_BOM) ? head.subarray(UTF8_BOM.length) : head;
    }
    yield* this.scan(buf);
  }

  /** The last record, if the input did not end with a line break. */
  *end(): Generator<CsvRecord> {
    if (this.head !== null) {
      // Shorter than a BOM and a prefix of one: two stray bytes, left for the UTF-8 check.
      const head = this.head;
      this.head = null;
      yield* this.scan(head);
    }
    if (this.state === QUOTED) {
      this.row += 1;
      yield { kind: 'unterminated_quote', row: this.row };
      return;
    }
    if (this.size > 0) {
      const record = this.take();
      if (record) yield record;
    }
  }

  private *scan(buf: Buffer): Generator<CsvRecord> {
    let i = 0;
    if (this.skipLF && buf.length > 0) {
      this.skipLF = false;
      if (buf[0] === LF) i = 1;
    }
    let start = i;
    let { separator, blank } = this.table;
    while (i < buf.length) {
      if (this.state === QUOTED) {
        const quote = buf.indexOf(QUOTE, i);
        if (quote === -1) break;
        this.state = QUOTE_SEEN;
        i = quote + 1;
        continue;
      }
      const b = buf[i] as number;
      if (b === CR || b === LF) {
        this.append(buf, start, i);
        const record = this.take();
        if (b === CR) {
          if (i + 1 < buf.length) {
            if (buf[i + 1] === LF) i += 1;
          } else {
            this.skipLF = true;
          }
        }
        i += 1;
        start = i;
        if (record) {
          yield record;
          // The reader may have set the delimiter while this generator was paused.
          ({ separator, blank } = this.table);
        }
        continue;
      }
      if (this.blank && blank[b] === 0) this.blank = false;
      if (separator[b] === 1) this.state = FIELD_START;
      else if (b === QUOTE) this.state = this.state === UNQUOTED ? UNQUOTED : QUOTED;
      else if (this.state === QUOTE_SEEN || (this.state === FIELD_START && blank[b] === 0)) this.state = UNQUOTED;
      i += 1;
    }
    this.append(buf, start, buf.length);
  }

  private append(buf: Buffer, start: number, end: number): void {
    if (end <= start) return;
    this.size += end - start;
    if (this.tooLarge) return;
    if (this.size > this.maxRecordBytes) {
      // Keep scanning to find where the record ends, but stop holding it.
      this.tooLarge = true;
      this.parts = [];
      return;
    }
    this.parts.push(buf.subarray(start, end));
  }

  /** Ends the current record; blank records are counted but not returned. */
  private take(): CsvRecord | null {
    this.row += 1;
    const { row, parts, size, tooLarge, blank } = this;
    this.state = FIELD_START;
    this.parts = [];
    this.size = 0;
    this.tooLarge = false;
    this.blank = true;
    if (blank) return null;
    if (tooLarge) return { kind: 'too_large', row };
    return { kind: 'record', row, bytes: parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size) };
  }
}

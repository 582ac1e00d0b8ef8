import { MAX_CSV_COLUMNS, MAX_PROPERTIES, resolveCsvColumns } from '@ingest/schemas';
import { BoundedErrors } from '@ingest/domain';
import { type FieldError, ProblemError } from '../http/problem.js';

/** Where the columns the event is built from sit in each row; -1 when absent. */
export interface CsvHeader {
  /** Trimmed column names, in file order. */
  names: string[];
  /** The header's record number (1 unless blank lines precede it). */
  row: number;
  eventName: number;
  timestamp: number;
  email: number;
  domain: number;
  eventId: number;
  /** Every other column: [cell position, name], each becoming an event property. */
  properties: [number, string][];
}

/**
 * The widest header a file may have: the mapped columns (the four of the spec and event_id)
 * and one column per property, of which an event may have at most 50. A wider header could
 * never give a valid event, and checking it first answers a header of 200,000 empty columns
 * with one error instead of one per column.
 */
export { MAX_CSV_COLUMNS };

/** The one error of a header wider than MAX_CSV_COLUMNS. */
export function tooManyColumns(row: number, columns: number): ProblemError {
  return new ProblemError('validation', `The CSV header (row ${row}) has ${columns} columns; at most ${MAX_CSV_COLUMNS} are allowed. Nothing was queued.`, {
    errors: [
      {
        row,
        code: 'too_many_columns',
        message: `the header has ${columns} columns; at most ${MAX_CSV_COLUMNS} are allowed (event_name, timestamp, email, domain, event_id and ${MAX_PROPERTIES} properties)`,
      },
    ],
  });
}

const COMMA = 0x2c;
const QUOTE = 0x22;

/**
 * The number of fields of a whole record, counted on its bytes without parsing its cells: a
 * header of 200,000 empty columns took fast-csv 50 to 120 ms of blocked event loop to split,
 * for an answer that needs only the count. Commas inside quotes do not count; a stray quote in
 * an unquoted field can only make the count smaller than fast-csv's, never larger, so a record
 * counted as too wide is too wide (a narrower count falls through to the full check).
 */
export function countFields(record: Buffer, delimiter: number = COMMA): number {
  let fields = 1;
  let quoted = false;
  for (const b of record) {
    if (b === QUOTE) quoted = !quoted;
    else if (b === delimiter && !quoted) fields += 1;
  }
  return fields;
}

/**
 * Checks the header row and says where each column is. Throws one ProblemError listing every
 * problem (so a caller fixes the file once), before anything is queued. Names are read by
 * `resolveCsvColumns` (@ingest/schemas, shared with the dashboard's early check): case, spaces
 * and underscores do not count (`Event Name` is event_name), near misses get a suggestion.
 */
export function readHeader(cells: string[], row: number): CsvHeader {
  if (cells.length > MAX_CSV_COLUMNS) throw tooManyColumns(row, cells.length);
  const layout = resolveCsvColumns(cells);
  const errors = new BoundedErrors<FieldError>();
  for (const problem of layout.problems) errors.push({ row, ...problem });
  if (errors.total > 0) {
    const count = errors.total === 1 ? 'a problem' : `${errors.total} problems`;
    throw new ProblemError('validation', `The CSV header (row ${row}) has ${count}; nothing was queued.`, {
      errors: [...errors.items],
      errorsTotal: errors.total,
    });
  }
  const at = (column: keyof typeof layout.columns) => layout.columns[column] ?? -1;
  return {
    names: cells.map((cell) => cell.trim()),
    row,
    eventName: at('event_name'),
    timestamp: at('timestamp'),
    email: at('email'),
    domain: at('domain'),
    eventId: at('event_id'),
    properties: layout.properties,
  };
}

import { MAX_PROPERTIES } from '@ingest/schemas';
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

const MAPPED = new Set(['event_name', 'timestamp', 'email', 'domain', 'event_id']);

/**
 * The widest header a file may have: the mapped columns (the four of the spec and event_id)
 * and one column per property, of which an event may have at most 50. A wider header could
 * never give a valid event, and checking it first answers a header of 200,000 empty columns
 * with one error instead of one per column.
 */
export const MAX_CSV_COLUMNS = MAPPED.size + MAX_PROPERTIES;

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
export function countFields(record: Buffer): number {
  let fields = 1;
  let quoted = false;
  for (const b of record) {
    if (b === QUOTE) quoted = !quoted;
    else if (b === COMMA && !quoted) fields += 1;
  }
  return fields;
}

/**
 * Checks the header row and says where each column is. Throws one ProblemError listing every
 * problem (so a caller fixes the file once), before anything is queued. Names are matched
 * exactly after trimming: the spec names the columns in lower case.
 */
export function readHeader(cells: string[], row: number): CsvHeader {
  if (cells.length > MAX_CSV_COLUMNS) {
    throw new ProblemError(
      'validation',
      `The CSV header (row ${row}) has ${cells.length} columns; at most ${MAX_CSV_COLUMNS} are allowed. Nothing was queued.`,
      {
        errors: [
          {
            row,
            code: 'too_many_columns',
            message: `the header has ${cells.length} columns; at most ${MAX_CSV_COLUMNS} are allowed (event_name, timestamp, email, domain, event_id and ${MAX_PROPERTIES} properties)`,
          },
        ],
      },
    );
  }
  const names = cells.map((cell) => cell.trim());
  const errors = new BoundedErrors<FieldError>();
  const positions = new Map<string, number[]>();
  names.forEach((name, i) => {
    if (name === '') return;
    const seen = positions.get(name);
    if (seen) seen.push(i);
    else positions.set(name, [i]);
  });
  const missing = (column: string, message: string) => errors.push({ row, column, code: 'missing_column', message });

  if (!positions.has('event_name')) missing('event_name', 'the header has no event_name column');
  if (!positions.has('timestamp')) missing('timestamp', 'the header has no timestamp column');
  if (!positions.has('email') && !positions.has('domain')) missing('email|domain', 'the header needs an email or a domain column (or both)');
  for (const [name, at] of positions) {
    if (at.length > 1) {
      errors.push({
        row,
        column: name,
        code: 'duplicate_column',
        message: `the column name appears ${at.length} times (columns ${at.map((i) => i + 1).join(', ')})`,
      });
    }
  }
  names.forEach((name, i) => {
    if (name === '') errors.push({ row, column: `#${i + 1}`, code: 'empty_column_name', message: `column ${i + 1} has no name` });
  });

  if (errors.total > 0) {
    const count = errors.total === 1 ? 'a problem' : `${errors.total} problems`;
    throw new ProblemError('validation', `The CSV header (row ${row}) has ${count}; nothing was queued.`, {
      errors: [...errors.items],
      errorsTotal: errors.total,
    });
  }

  const at = (name: string) => positions.get(name)?.[0] ?? -1;
  return {
    names,
    row,
    eventName: at('event_name'),
    timestamp: at('timestamp'),
    email: at('email'),
    domain: at('domain'),
    eventId: at('event_id'),
    properties: names.flatMap((name, i): [number, string][] => (MAPPED.has(name) ? [] : [[i, name]])),
  };
}

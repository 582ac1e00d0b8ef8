import { specColumnOf, MAX_CSV_COLUMNS } from '@ingest/schemas';
import { ProblemError } from '../http/problem.js';
import { countFields } from './csv-header.js';

/**
 * The delimiters an upload may use: the comma of RFC 4180, the semicolon that spreadsheets
 * write in locales whose decimal separator is a comma (most of Europe), and the tab of
 * "tab-separated values" exports. Byte values: every one is ASCII, so the record splitter can
 * work on bytes (see csv-records.ts).
 */
export const CSV_DELIMITERS = [
  { byte: 0x2c, char: ',', name: 'comma' },
  { byte: 0x3b, char: ';', name: 'semicolon' },
  { byte: 0x09, char: '\t', name: 'tab' },
] as const;
export type CsvDelimiter = (typeof CSV_DELIMITERS)[number];

const QUOTE = 0x22;
const TRIED = CSV_DELIMITERS.map((d) => `${d.name} (${d.char === '\t' ? '\\t' : d.char})`).join(', ');

/**
 * The `delimiter` form field: `,` `;` or a tab character, or their names (`comma`,
 * `semicolon`, `tab`; also `\t` as typed in a shell). Anything else is a 400 naming the field.
 */
export function delimiterFromField(value: string): CsvDelimiter {
  const v = value === '\t' ? value : value.trim().toLowerCase();
  const found = CSV_DELIMITERS.find((d) => d.char === v || d.name === v || (d.name === 'tab' && v === '\\t'));
  if (found) return found;
  throw new ProblemError('validation', `The delimiter form field must be one of ${TRIED}.`, {
    errors: [{ field: 'delimiter', code: 'invalid_value', message: `must be one of ${TRIED}` }],
  });
}

/**
 * Picks the delimiter of a file from its header record's bytes: the candidate whose split
 * gives the most names of the spec's columns (`Event Name` counts: names are normalised), then
 * the most fields. A header that no candidate splits into two or more fields, or that two
 * candidates read equally well, cannot be decided: a 400 naming the delimiters tried and the
 * `delimiter` form field that settles it.
 */
export function detectDelimiter(header: Buffer, row: number): CsvDelimiter {
  const scored = CSV_DELIMITERS.map((d) => {
    const fields = countFields(header, d.byte);
    return { d, fields, known: knownColumns(header, d.byte, fields) };
  });
  scored.sort((a, b) => b.known - a.known || b.fields - a.fields);
  const [best, second] = scored;
  if (best === undefined || best.fields < 2 || (second !== undefined && second.known === best.known && second.fields === best.fields)) {
    throw new ProblemError(
      'validation',
      `The delimiter of the CSV header (row ${row}) could not be detected; tried ${TRIED}. Send the form field delimiter (before the file part) to name it.`,
      { errors: [{ row, code: 'unknown_delimiter', message: `no delimiter splits the header into the expected columns; tried ${TRIED}` }] },
    );
  }
  return best.d;
}

/**
 * How many distinct spec columns the header names when split on `delimiter` (quotes kept out
 * of the names). Not looked at for a split wider than any valid header: that one is answered
 * by its width, and 200,000 names are not worth normalising.
 */
function knownColumns(header: Buffer, delimiter: number, fields: number): number {
  if (fields > MAX_CSV_COLUMNS) return 0;
  const known = new Set<string>();
  let start = 0;
  let quoted = false;
  for (let i = 0; i <= header.length; i += 1) {
    const b = header[i];
    if (b === QUOTE) quoted = !quoted;
    else if (i === header.length || (b === delimiter && !quoted)) {
      const column = specColumnOf(header.toString('utf8', start, i).replaceAll('"', '').trim());
      if (column) known.add(column);
      start = i + 1;
    }
  }
  return known.size;
}

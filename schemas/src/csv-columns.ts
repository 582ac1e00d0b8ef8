/**
 * The CSV upload's columns and how a header's names are read: one module for the server
 * (`packages/http/src/csv/csv-header.ts`, the authority) and the dashboard's early check in the
 * browser (`services/console/web/src/csv-header-check.ts`), so both say the same thing. Pure
 * and dependency-light on purpose: the web bundle imports it (`@ingest/schemas/csv-columns`),
 * so it must not pull in TypeBox or Ajv.
 *
 * Names are matched after normalisation: case, spaces and underscores do not count, so
 * `Event Name`, `EVENT_NAME` and `eventName` are all `event_name` (the spreadsheets people
 * export from write headers for humans). Anything else close to a column name (`evnt_name`,
 * `time`, `e-mail`) is not guessed at: it stays a property, and if the column it resembles is
 * missing, the error names it as a suggestion.
 */
import { distance } from 'fastest-levenshtein';

/** The columns the spec names, plus `event_id`; every other column becomes a property. */
export const CSV_COLUMNS = ['event_name', 'timestamp', 'email', 'domain', 'event_id'] as const;
export type CsvColumn = (typeof CSV_COLUMNS)[number];

/** The spec's 50 properties per event (MAX_PROPERTIES in ingest-event.ts; a literal so this module stays free of TypeBox). */
const MAX_CSV_PROPERTIES = 50;
/** The widest header a file may have: the mapped columns and one column per property. */
export const MAX_CSV_COLUMNS = CSV_COLUMNS.length + MAX_CSV_PROPERTIES;

/** Lower case, without white space and underscores: the form two names are compared in. */
export function normalizeColumnName(name: string): string {
  return name.toLowerCase().replace(/[\s_]+/g, '');
}

const BY_NORMAL = new Map<string, CsvColumn>(CSV_COLUMNS.map((c) => [normalizeColumnName(c), c]));

/** The column a header name stands for, or undefined for a property. */
export function specColumnOf(name: string): CsvColumn | undefined {
  return BY_NORMAL.get(normalizeColumnName(name));
}

/** Words people use for a column that are too far from its name for an edit distance. */
const ALIASES: Record<string, CsvColumn> = {
  event: 'event_name',
  name: 'event_name',
  eventtype: 'event_name',
  action: 'event_name',
  time: 'timestamp',
  date: 'timestamp',
  datetime: 'timestamp',
  ts: 'timestamp',
  eventtime: 'timestamp',
  createdat: 'timestamp',
  occurredat: 'timestamp',
  mail: 'email',
  emailaddress: 'email',
  website: 'domain',
  companydomain: 'domain',
  id: 'event_id',
};

/**
 * The column a near miss was probably meant to be: a known alias, or at most two edits from
 * a column's normalised name (hyphens and dots ignored too: `e-mail`, `event.name`).
 */
export function suggestCsvColumn(name: string): CsvColumn | undefined {
  const loose = normalizeColumnName(name).replace(/[-.]/g, '');
  if (loose === '') return undefined;
  const exact = BY_NORMAL.get(loose) ?? ALIASES[loose];
  if (exact) return exact;
  let best: { column: CsvColumn; d: number } | undefined;
  for (const [normal, column] of BY_NORMAL) {
    // Lengths further apart than 2 are more than 2 edits: skipped, so a 1 MiB name costs nothing here.
    if (Math.abs(loose.length - normal.length) > 2) continue;
    const d = distance(loose, normal);
    if (d <= 2 && d < normal.length / 2 && (best === undefined || d < best.d)) best = { column, d };
  }
  return best?.column;
}

export type CsvHeaderProblemCode = 'too_many_columns' | 'missing_column' | 'duplicate_column' | 'ambiguous_column' | 'empty_column_name';

export interface CsvHeaderProblem {
  code: CsvHeaderProblemCode;
  /** The column concerned: a spec name, a header name, `email|domain`, or `#3` for an unnamed one. */
  column?: string;
  message: string;
}

export interface CsvColumnLayout {
  /** Where each mapped column sits (0-based); absent when the header has none. */
  columns: Partial<Record<CsvColumn, number>>;
  /** Every other column: [cell position, trimmed name], each becoming an event property. */
  properties: [number, string][];
  /** Everything wrong with the header, in a stable order; empty when the header can be used. */
  problems: CsvHeaderProblem[];
}

const quoted = (name: string) => `“${name.length > 100 ? `${name.slice(0, 100)}…` : name}”`;

/**
 * Reads a header row: which column is which, and every problem with it. A header wider than
 * MAX_CSV_COLUMNS is one problem and nothing else (a header of 200,000 empty columns must not
 * give 200,000 errors).
 */
export function resolveCsvColumns(cells: readonly string[]): CsvColumnLayout {
  if (cells.length > MAX_CSV_COLUMNS) {
    return {
      columns: {},
      properties: [],
      problems: [
        {
          code: 'too_many_columns',
          message: `the header has ${cells.length} columns; at most ${MAX_CSV_COLUMNS} are allowed (${CSV_COLUMNS.join(', ')} and ${MAX_CSV_PROPERTIES} properties)`,
        },
      ],
    };
  }
  const names = cells.map((cell) => cell.trim());
  const problems: CsvHeaderProblem[] = [];
  const mapped = new Map<CsvColumn, number[]>();
  const exact = new Map<string, number[]>();
  const properties: [number, string][] = [];
  names.forEach((name, i) => {
    if (name === '') return;
    const column = specColumnOf(name);
    if (column) mapped.set(column, [...(mapped.get(column) ?? []), i]);
    else properties.push([i, name]);
    exact.set(name, [...(exact.get(name) ?? []), i]);
  });

  const unmapped = properties.map(([, name]) => name);
  const missing = (column: CsvColumn | 'email|domain', message: string, wanted: CsvColumn[]) => {
    const hint = unmapped.find((name) => wanted.includes(suggestCsvColumn(name) as CsvColumn));
    const suggestion = hint === undefined ? '' : `; did you mean ${quoted(hint)}? Rename it to ${suggestCsvColumn(hint)}`;
    problems.push({ code: 'missing_column', column, message: `${message}${suggestion}` });
  };
  if (!mapped.has('event_name')) missing('event_name', 'the header has no event_name column', ['event_name']);
  if (!mapped.has('timestamp')) missing('timestamp', 'the header has no timestamp column', ['timestamp']);
  if (!mapped.has('email') && !mapped.has('domain')) missing('email|domain', 'the header needs an email or a domain column (or both)', ['email', 'domain']);

  for (const [name, at] of exact) {
    if (at.length > 1) {
      problems.push({
        code: 'duplicate_column',
        column: name,
        message: `the column name ${quoted(name)} appears ${at.length} times (columns ${at.map((i) => i + 1).join(', ')})`,
      });
    }
  }
  for (const [column, at] of mapped) {
    const distinct = new Set(at.map((i) => names[i]));
    if (distinct.size > 1) {
      problems.push({
        code: 'ambiguous_column',
        column,
        message: `columns ${at.map((i) => `${i + 1} ${quoted(names[i] ?? '')}`).join(' and ')} ${at.length === 2 ? 'both' : 'all'} read as ${column}; keep one of them`,
      });
    }
  }
  names.forEach((name, i) => {
    if (name === '') problems.push({ code: 'empty_column_name', column: `#${i + 1}`, message: `column ${i + 1} has no name` });
  });

  const columns: Partial<Record<CsvColumn, number>> = {};
  for (const [column, at] of mapped) columns[column] = at[0] as number;
  return { columns, properties, problems };
}

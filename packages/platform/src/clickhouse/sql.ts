import { AppError } from '../errors.js';

/**
 * The one place where values become SQL text. ClickHouse 18.16 has no server-side query
 * parameters, so every value that reaches SQL goes through `sql` (or `literal`). In ClickHouse
 * string literals the backslash is an escape character: doubling quotes alone lets `\'` break
 * out of the literal, so the backslash is escaped first, then quotes and control characters.
 */

/** A piece of SQL that is already safe: an escaped identifier or trusted constant text. */
export class SqlFragment {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type SqlValue = string | number | bigint | boolean | null | Date | SqlFragment | readonly SqlValue[];

const CONTROL_ESCAPES: Record<string, string> = {
  '\\': '\\\\',
  "'": "\\'",
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\0': '\\0',
  '\b': '\\b',
  '\f': '\\f',
};

export function escapeString(value: string): string {
  // One pass in which the backslash is handled like every other special character, so no
  // escape is ever escaped twice.
  // Matching control characters is the point: each becomes an escape.
  return value.replace(/[\\'\n\r\t\0\b\f\x01-\x07\x0b\x0e-\x1f\x7f]/g, (ch) => {
    return CONTROL_ESCAPES[ch] ?? `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
}

export function ident(name: string): SqlFragment {
  if (name.length === 0) throw new AppError('invalid_identifier', 'empty SQL identifier');
  return new SqlFragment(`\`${name.replace(/[\\`]/g, (ch) => `\\${ch}`)}\``);
}

/** Trusted SQL text (constants of our own code). Never pass user input here. */
export function raw(text: string): SqlFragment {
  return new SqlFragment(text);
}

export function toDateTimeString(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new AppError('invalid_sql_value', 'invalid Date');
  return date.toISOString().slice(0, 19).replace('T', ' ');
}

export function literal(value: SqlValue): string {
  if (value === null) return 'NULL';
  if (value instanceof SqlFragment) return value.text;
  if (value instanceof Date) return `'${toDateTimeString(value)}'`;
  if (Array.isArray(value)) {
    if (value.length === 0) throw new AppError('invalid_sql_value', 'empty list cannot be rendered as SQL');
    return `(${value.map((v) => literal(v)).join(', ')})`;
  }
  switch (typeof value) {
    case 'string':
      return `'${escapeString(value)}'`;
    case 'number':
      if (!Number.isFinite(value)) throw new AppError('invalid_sql_value', `non-finite number ${value}`);
      return String(value);
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? '1' : '0';
    default:
      throw new AppError('invalid_sql_value', `unsupported SQL value of type ${typeof value}`);
  }
}

/**
 * Tagged template: sql`SELECT * FROM ${ident(t)} WHERE account_id = ${id} AND n IN ${list}`.
 * Every interpolation is rendered by `literal`; arrays become `(a, b, c)` for IN.
 */
export function sql(strings: TemplateStringsArray, ...values: SqlValue[]): string {
  let out = strings[0] ?? '';
  values.forEach((v, i) => {
    out += literal(v) + (strings[i + 1] ?? '');
  });
  return out;
}

import { describe, expect, it } from 'vitest';
import { AppError } from '../errors.js';
import { escapeString, ident, literal, raw, sql, toDateTimeString } from './sql.js';

describe('escapeString', () => {
  it("escapes the backslash before the quote so \\' cannot close the literal", () => {
    expect(escapeString("\\' OR 1=1 --")).toBe("\\\\\\' OR 1=1 --");
  });

  it('escapes quotes and control characters', () => {
    expect(escapeString("it's")).toBe("it\\'s");
    expect(escapeString('a\nb\rc\td\0e\bf\fg')).toBe('a\\nb\\rc\\td\\0e\\bf\\fg');
    expect(escapeString('\x01\x1f\x7f')).toBe('\\x01\\x1f\\x7f');
  });

  it('leaves ordinary text and unicode alone', () => {
    expect(escapeString('héllo 🚀 "double"')).toBe('héllo 🚀 "double"');
  });
});

describe('literal', () => {
  it('renders each supported type', () => {
    expect(literal('x')).toBe("'x'");
    expect(literal(42)).toBe('42');
    expect(literal(-1.5)).toBe('-1.5');
    expect(literal(12345678901234567890n)).toBe('12345678901234567890');
    expect(literal(true)).toBe('1');
    expect(literal(null)).toBe('NULL');
    expect(literal(new Date('2026-03-04T05:06:07.890Z'))).toBe("'2026-03-04 05:06:07'");
    expect(literal(['a', 1])).toBe("('a', 1)");
  });

  it('refuses values that are not safe to render', () => {
    expect(() => literal(Number.NaN)).toThrow(AppError);
    expect(() => literal(Number.POSITIVE_INFINITY)).toThrow(/non-finite/);
    expect(() => literal([])).toThrow(/empty list/);
    expect(() => literal({} as never)).toThrow(/unsupported/);
    expect(() => toDateTimeString(new Date('nope'))).toThrow(/invalid Date/);
  });
});

describe('ident', () => {
  it('backquotes and escapes backticks and backslashes', () => {
    expect(ident('events').text).toBe('`events`');
    expect(ident('we`ird\\').text).toBe('`we\\`ird\\\\`');
    expect(() => ident('')).toThrow(/empty/);
  });
});

describe('sql', () => {
  it('escapes every interpolation and passes fragments through', () => {
    const accountId = "a'; DROP TABLE events; --";
    expect(sql`SELECT count() FROM ${ident('events')} WHERE account_id = ${accountId} AND n IN ${[1, 2]} ${raw('FORMAT JSON')}`).toBe(
      "SELECT count() FROM `events` WHERE account_id = 'a\\'; DROP TABLE events; --' AND n IN (1, 2) FORMAT JSON",
    );
  });
});

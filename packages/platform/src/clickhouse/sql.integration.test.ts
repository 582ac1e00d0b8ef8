/**
 * Real server: ClickHouse (18.16 locally, current versions with Docker).
 * Hostile strings must round-trip through every place values reach SQL: SELECT literals,
 * WHERE, IN and INSERT, with no way out of the literal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestClickHouse, type TestClickHouse } from '@ingest/testkit';
import { ident, sql } from './sql.js';

const HOSTILE = [
  "it's",
  "\\' OR 1=1 --",
  "'; DROP TABLE t; --",
  'back\\slash\\',
  'line\nbreak\r\ttab',
  'nul\0byte',
  '\\x41 is not A',
  '\x01\x02\x1f\x7f',
  'emoji 🚀👩‍💻 and ünïcödé',
  '`backtick` "double"',
  '',
];

let t: TestClickHouse;

beforeAll(async () => {
  t = await createTestClickHouse();
  await t.ch.command('CREATE TABLE hostile (id UInt32, s String) ENGINE = MergeTree ORDER BY id');
});

afterAll(async () => {
  await t?.cleanup();
});

describe('SQL escaping against a real ClickHouse', () => {
  it.each(HOSTILE.map((s, i) => [i, s] as const))('round-trips hostile string #%i through SELECT', async (_i, value) => {
    const [row] = await t.ch.query<{ s: string; len: string }>(sql`SELECT ${value} AS s, length(${value}) AS len`);
    expect(row?.s).toBe(value);
    expect(Number(row?.len)).toBe(Buffer.byteLength(value));
  });

  it('matches hostile values in INSERT, WHERE and IN exactly', async () => {
    await t.ch.insert(
      'hostile',
      HOSTILE.map((s, id) => ({ id, s })),
    );
    for (const [id, value] of HOSTILE.entries()) {
      const rows = await t.ch.query<{ id: number }>(sql`SELECT id FROM ${ident('hostile')} WHERE s = ${value}`);
      expect(rows.map((r) => Number(r.id))).toEqual([id]);
    }
    const inRows = await t.ch.query<{ n: string }>(sql`SELECT count() AS n FROM hostile WHERE s IN ${HOSTILE}`);
    expect(Number(inRows[0]?.n)).toBe(HOSTILE.length);
    const [all] = await t.ch.query<{ n: string }>('SELECT count() AS n FROM hostile');
    expect(Number(all?.n)).toBe(HOSTILE.length);
  });

  it('statement-breaking input stays a value', async () => {
    const attack = "x' UNION SELECT name FROM system.tables --";
    const rows = await t.ch.query(sql`SELECT id FROM hostile WHERE s = ${attack}`);
    expect(rows).toEqual([]);
  });
});

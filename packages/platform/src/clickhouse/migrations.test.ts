import { describe, expect, it } from 'vitest';
import { CLICKHOUSE_MIGRATIONS_DIR } from '../paths.js';
import { loadMigrations, parseMigration } from './migrations.js';

describe('parseMigration', () => {
  it('splits statements at line-ending semicolons and drops comment lines', () => {
    const m = parseMigration('0002_rollup.sql', '-- why\nCREATE TABLE a (x UInt8) ENGINE = Memory;\n\n-- more\nCREATE VIEW v AS SELECT 1;\n');
    expect(m).toEqual({ version: 2, name: 'rollup', statements: ['CREATE TABLE a (x UInt8) ENGINE = Memory', 'CREATE VIEW v AS SELECT 1'] });
  });

  it('keeps semicolons inside a line (string literals)', () => {
    const m = parseMigration('0003_x.sql', "SELECT 'a;b' AS s;\n");
    expect(m.statements).toEqual(["SELECT 'a;b' AS s"]);
  });

  it('reads the minimum server version of optional extras', () => {
    const m = parseMigration('0004_ttl.sql', '-- requires: clickhouse >= 20\nALTER TABLE events MODIFY TTL event_time + INTERVAL 1 YEAR;');
    expect(m.minServerMajor).toBe(20);
  });

  it('refuses bad file names and empty files', () => {
    expect(() => parseMigration('events.sql', 'SELECT 1;')).toThrow(/0001_name\.sql/);
    expect(() => parseMigration('0005_empty.sql', '-- nothing\n')).toThrow(/no statements/);
  });
});

describe('the repository migrations', () => {
  it('are numbered uniquely and each parses', async () => {
    const migrations = await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR);
    expect(migrations.length).toBeGreaterThan(0);
    expect(migrations[0]?.version).toBe(1);
    expect(migrations.map((m) => m.version)).toEqual([...migrations.map((m) => m.version)].sort((a, b) => a - b));
  });
});

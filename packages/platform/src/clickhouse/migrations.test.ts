import { describe, expect, it } from 'vitest';
import { CLICKHOUSE_MIGRATIONS_DIR } from '../paths.js';
import { loadMigrations, parseMigration, serverAtLeast } from './migrations.js';

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
    expect(m.minServer).toEqual({ major: 20, minor: 0 });
    expect(parseMigration('0005_current.sql', '-- requires: clickhouse >= 24.8\nSELECT 1;').minServer).toEqual({ major: 24, minor: 8 });
    expect(parseMigration('0006_plain.sql', 'SELECT 1;').minServer).toBeUndefined();
  });

  it('refuses bad file names and empty files', () => {
    expect(() => parseMigration('events.sql', 'SELECT 1;')).toThrow(/0001_name\.sql/);
    expect(() => parseMigration('0005_empty.sql', '-- nothing\n')).toThrow(/no statements/);
  });
});

describe('serverAtLeast', () => {
  it('compares major, then minor', () => {
    expect(serverAtLeast('18.16.1', { major: 20, minor: 0 })).toBe(false);
    expect(serverAtLeast('24.8.4.1', { major: 24, minor: 8 })).toBe(true);
    expect(serverAtLeast('24.3.1.2', { major: 24, minor: 8 })).toBe(false);
    expect(serverAtLeast('26.9.2.1', { major: 24, minor: 8 })).toBe(true);
    expect(serverAtLeast('25.1.1', { major: 24, minor: 8 })).toBe(true);
    expect(serverAtLeast('garbage', { major: 1, minor: 0 })).toBe(false);
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

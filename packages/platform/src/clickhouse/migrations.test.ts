import { describe, expect, it } from 'vitest';
import { CLICKHOUSE_MIGRATIONS_DIR } from '../paths.js';
import type { ClickHouse } from './client.js';
import { applyPending, loadMigrations, parseMigration, serverAtLeast } from './migrations.js';
import { createLogger } from '../logger.js';

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
    expect(parseMigration('0005_current.sql', '-- requires: clickhouse >= 24.8\nSELECT 1;').onOlder).toBe('skip');
    expect(parseMigration('0007_must.sql', '-- needs: clickhouse >= 25.3\nSELECT 1;')).toMatchObject({ minServer: { major: 25, minor: 3 }, onOlder: 'stop' });
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

/** A server of `version` that runs nothing but keeps schema_migrations' rows and the commands it was sent. */
function fakeServer(version: string, recorded: { version: number; status: string }[] = []) {
  const commands: string[] = [];
  const ch = {
    command: (q: string) => {
      commands.push(q);
      return Promise.resolve();
    },
    query: (q: string) => Promise.resolve(q.startsWith('SELECT version()') ? [{ version }] : recorded.map((r) => ({ ...r }))),
    insert: (_table: string, rows: { version: number; status: string }[]) => {
      recorded.push(...rows);
      return Promise.resolve();
    },
  } as unknown as ClickHouse;
  return { ch, commands, recorded };
}

describe('applyPending on servers of each version', () => {
  const logger = createLogger({ service: 'test', level: 'silent' });
  const base = parseMigration('0001_base.sql', 'CREATE TABLE t (x UInt8) ENGINE = MergeTree ORDER BY x;');
  const extra = parseMigration('0002_extra.sql', '-- requires: clickhouse >= 25.3\nALTER TABLE t ADD COLUMN j JSON;');
  const must = parseMigration('0003_must.sql', '-- needs: clickhouse >= 24.8\nCREATE TABLE t64 (at DateTime64(3)) ENGINE = MergeTree ORDER BY at;');

  it('stops on a migration that needs a newer server, naming the version, before applying anything', async () => {
    const server = fakeServer('18.16.1');
    await expect(applyPending(server.ch, [base, extra, must], logger)).rejects.toThrow(
      'migration 0003_must needs ClickHouse >= 24.8; this server is 18.16.1 (nothing was applied)',
    );
    expect(server.commands.filter((c) => !c.includes('schema_migrations'))).toEqual([]);
    expect(server.recorded).toEqual([]);
  });

  it('stops on a server older than 18.16, naming the version the migrations need', async () => {
    await expect(applyPending(fakeServer('1.1.54394').ch, [base], logger)).rejects.toThrow('the migrations need ClickHouse >= 18.16; this server is 1.1.54394');
  });

  it('applies an extra it skipped once the server is new enough, and only then', async () => {
    const old = fakeServer('24.8.4.1');
    expect(await applyPending(old.ch, [base, extra], logger)).toMatchObject({ applied: ['0001_base'], skipped: ['0002_extra'] });
    expect(await applyPending(old.ch, [base, extra], logger)).toMatchObject({ applied: [], skipped: [] });
    const upgraded = fakeServer('25.8.1.1', old.recorded);
    expect(await applyPending(upgraded.ch, [base, extra], logger)).toMatchObject({ applied: ['0002_extra'], skipped: [] });
    expect(upgraded.commands).toContain('ALTER TABLE t ADD COLUMN j JSON');
    expect(await applyPending(upgraded.ch, [base, extra], logger)).toMatchObject({ applied: [], skipped: [] });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHDB_ENGINES, type ChdbEngine, chdbClickHouse, startChdb } from '@ingest/testkit/chdb';
import type { ClickHouse } from './client.js';
import { applyPending, parseMigration } from './migrations.js';
import { createLogger } from '../logger.js';

/**
 * `-- requires: clickhouse >= N.M` on the current engines: an extra for 24.8 applies on 24.8 and
 * 26.9, one for 25.1 only on 26.9 (and both are recorded, applied or skipped, either way).
 * The repository's own migrations are applied by events-table.chdb.test.ts.
 */
const migrations = [
  parseMigration('0001_base.sql', 'CREATE TABLE t (id String) ENGINE = MergeTree ORDER BY id;'),
  parseMigration(
    '0002_current.sql',
    "-- requires: clickhouse >= 24.8\nCREATE TABLE t64 (at DateTime64(3, 'UTC') CODEC(Delta, ZSTD), kind LowCardinality(String)) ENGINE = MergeTree ORDER BY at;",
  ),
  parseMigration('0003_newer.sql', '-- requires: clickhouse >= 25.1\nCREATE TABLE t_newer (id String) ENGINE = MergeTree ORDER BY id;'),
];

describe.each(CHDB_ENGINES)('-- requires on $name', ({ name, serverMajor }) => {
  let engine: ChdbEngine;
  let ch: ClickHouse;
  beforeAll(async () => {
    engine = await startChdb(name);
    ch = await chdbClickHouse(engine, 'req');
  });
  afterAll(() => engine?.close());

  it('applies the extras this version has and records the others as skipped', async () => {
    const result = await applyPending(ch, migrations, createLogger({ service: 'chdb-test', level: 'silent' }));
    const newer = serverMajor >= 25;
    expect(result.applied).toEqual(['0001_base', '0002_current', ...(newer ? ['0003_newer'] : [])]);
    expect(result.skipped).toEqual(newer ? [] : ['0003_newer']);
    const recorded = await ch.query<{ version: number; status: string }>('SELECT version, status FROM schema_migrations ORDER BY version');
    expect(recorded.map((r) => `${r.version}:${r.status}`)).toEqual(['1:applied', '2:applied', `3:${newer ? 'applied' : 'skipped'}`]);
    const tables = await ch.query<{ name: string }>("SELECT name FROM system.tables WHERE database = 'req' AND name LIKE 't%' ORDER BY name");
    expect(tables.map((t) => t.name)).toEqual(['t', 't64', ...(newer ? ['t_newer'] : [])]);
  });

  it('stops on a migration that needs a newer server, naming the version, and applies nothing', async () => {
    const must = parseMigration('0004_future.sql', '-- needs: clickhouse >= 99.1\nCREATE TABLE t_future (id String) ENGINE = MergeTree ORDER BY id;');
    const later = parseMigration('0005_later.sql', 'CREATE TABLE t_later (id String) ENGINE = MergeTree ORDER BY id;');
    await expect(applyPending(ch, [...migrations, must, later], createLogger({ service: 'chdb-test', level: 'silent' }))).rejects.toThrow(
      /^migration 0004_future needs ClickHouse >= 99\.1; this server is (26\.9|24\.8)\.[\d.]+ \(nothing was applied\)$/,
    );
    const tables = await ch.query<{ name: string }>("SELECT name FROM system.tables WHERE database = 'req' AND name IN ('t_future', 't_later')");
    expect(tables).toEqual([]);
    const recorded = await ch.query<{ version: number }>('SELECT version FROM schema_migrations WHERE version >= 4');
    expect(recorded).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { CLICKHOUSE_MIGRATIONS_DIR } from '../paths.js';
import type { ClickHouse } from './client.js';
import { toClusterStatements } from './cluster-ddl.js';
import { applyPending, loadMigrations, parseMigration } from './migrations.js';
import { createLogger } from '../logger.js';

const target = { cluster: 'ingest_cluster', database: 'ingest' };

describe('toClusterStatements', () => {
  it('makes a MergeTree table replicated, on the cluster, with its Distributed table', () => {
    const [table, distributed, ...rest] = toClusterStatements(
      'CREATE TABLE IF NOT EXISTS events\n(\n    account_id String,\n    inserted_at DateTime\n)\nENGINE = ReplacingMergeTree(inserted_at)\nORDER BY account_id',
      target,
    );
    expect(rest).toEqual([]);
    expect(table).toBe(
      "CREATE TABLE IF NOT EXISTS ingest.events ON CLUSTER ingest_cluster\n(\n    account_id String,\n    inserted_at DateTime\n)\nENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/ingest/events', '{replica}', inserted_at)\nORDER BY account_id",
    );
    expect(distributed).toBe(
      'CREATE TABLE IF NOT EXISTS ingest.events_all ON CLUSTER ingest_cluster AS ingest.events ENGINE = Distributed(ingest_cluster, ingest, events, sipHash64(account_id))',
    );
  });

  it('keeps engines without arguments (with or without parentheses) and skips the Distributed table without account_id', () => {
    expect(toClusterStatements('CREATE TABLE IF NOT EXISTS t\n(id String)\nENGINE = AggregatingMergeTree()\nORDER BY id', target)).toEqual([
      "CREATE TABLE IF NOT EXISTS ingest.t ON CLUSTER ingest_cluster\n(id String)\nENGINE = ReplicatedAggregatingMergeTree('/clickhouse/tables/{shard}/ingest/t', '{replica}')\nORDER BY id",
    ]);
    expect(toClusterStatements('CREATE TABLE IF NOT EXISTS t (id String) ENGINE = MergeTree ORDER BY id', target)[0]).toContain(
      "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/ingest/t', '{replica}') ORDER BY id",
    );
  });

  it('runs views, materialized views and ALTERs on the cluster with qualified names', () => {
    expect(toClusterStatements('CREATE VIEW IF NOT EXISTS events_dedup AS\nSELECT * FROM events FINAL', target)).toEqual([
      'CREATE VIEW IF NOT EXISTS ingest.events_dedup ON CLUSTER ingest_cluster AS\nSELECT * FROM ingest.events FINAL',
    ]);
    expect(toClusterStatements('CREATE MATERIALIZED VIEW IF NOT EXISTS m TO r AS\nSELECT account_id FROM events\nGROUP BY account_id', target)).toEqual([
      'CREATE MATERIALIZED VIEW IF NOT EXISTS ingest.m ON CLUSTER ingest_cluster TO ingest.r AS\nSELECT account_id FROM ingest.events\nGROUP BY account_id',
    ]);
    expect(toClusterStatements('ALTER TABLE audit_log MODIFY COLUMN at_ms Int64 CODEC(Delta, ZSTD(1))', target)).toEqual([
      'ALTER TABLE ingest.audit_log ON CLUSTER ingest_cluster MODIFY COLUMN at_ms Int64 CODEC(Delta, ZSTD(1))',
    ]);
    expect(toClusterStatements('DROP TABLE IF EXISTS events_dedup', target)).toEqual(['DROP TABLE IF EXISTS ingest.events_dedup ON CLUSTER ingest_cluster']);
  });

  it('makes the Distributed table again after a column is added, when the table has one (it keeps the columns it was made with)', () => {
    const add = 'ALTER TABLE events ADD COLUMN IF NOT EXISTS user_id String AFTER job_id';
    expect(toClusterStatements(add, target, { distributedTables: new Set(['events_all', 'usage_hourly_all']) })).toEqual([
      'ALTER TABLE ingest.events ON CLUSTER ingest_cluster ADD COLUMN IF NOT EXISTS user_id String AFTER job_id',
      'DROP TABLE IF EXISTS ingest.events_all ON CLUSTER ingest_cluster',
      'CREATE TABLE IF NOT EXISTS ingest.events_all ON CLUSTER ingest_cluster AS ingest.events ENGINE = Distributed(ingest_cluster, ingest, events, sipHash64(account_id))',
    ]);
    expect(toClusterStatements(add, target, { distributedTables: new Set(['usage_hourly_all']) })).toEqual([
      'ALTER TABLE ingest.events ON CLUSTER ingest_cluster ADD COLUMN IF NOT EXISTS user_id String AFTER job_id',
    ]);
    // Other ALTERs stay on the table alone.
    expect(toClusterStatements('ALTER TABLE events MODIFY COLUMN email String', target, { distributedTables: new Set(['events_all']) })).toHaveLength(1);
  });

  it('refuses a statement it cannot replicate, naming it', () => {
    expect(() => toClusterStatements('CREATE TABLE IF NOT EXISTS m (x UInt8) ENGINE = Memory', target)).toThrow(
      /cannot run on a cluster: a table without a MergeTree engine/,
    );
    expect(() => toClusterStatements('DROP TABLE events', target)).toThrow(/cannot run on a cluster: .*DROP TABLE events/);
    expect(() => toClusterStatements('DROP TABLE IF EXISTS events SYNC', target)).toThrow(/cannot run on a cluster/);
    expect(() => toClusterStatements('ALTER TABLE IF EXISTS events ADD COLUMN x String', target)).toThrow(/cannot run on a cluster/);
    expect(() => toClusterStatements('CREATE TABLE t (x UInt8) ENGINE = MergeTree ORDER BY x', target)).toThrow(/cannot run on a cluster/);
  });

  it('refuses a cluster or database name that is not a plain name', () => {
    expect(() => toClusterStatements('ALTER TABLE t DELETE WHERE 1', { cluster: 'a b', database: 'ingest' })).toThrow(
      /CLICKHOUSE_CLUSTER must be a plain name/,
    );
    expect(() => toClusterStatements('ALTER TABLE t DELETE WHERE 1', { cluster: 'c', database: 'x;y' })).toThrow(/CLICKHOUSE_DATABASE must be a plain name/);
  });

  it('rewrites every statement of the repository migrations', async () => {
    for (const m of await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR)) {
      for (const statement of m.statements) {
        for (const sent of toClusterStatements(statement, target)) {
          expect(sent, `${m.name}: ${sent}`).toMatch(/ ON CLUSTER ingest_cluster(\s|$)/);
          expect(sent, `${m.name}: ${sent}`).not.toMatch(/ENGINE = (Replacing|Summing|Aggregating)?MergeTree/);
        }
      }
    }
  });
});

/**
 * A server that runs nothing, with the commands it was sent: `version`, the columns it says it has
 * (system.columns), and the Distributed tables the commands made (system.tables).
 */
function fakeServer(version = '18.16.1', columns: readonly string[] = []) {
  const commands: string[] = [];
  const recorded: { version: number; status: string }[] = [];
  const answer = (q: string): unknown[] => {
    if (q.startsWith('SELECT version()')) return [{ version }];
    if (q.includes('FROM system.columns')) return columns.filter((c) => q.includes(`name = '${c}'`)).map((name) => ({ name }));
    if (q.includes('FROM system.tables')) {
      return commands.flatMap((c) => (c.includes('ENGINE = Distributed') ? [{ name: /\.(\w+) ON CLUSTER/.exec(c)?.[1] ?? '' }] : []));
    }
    return recorded.map((r) => ({ ...r }));
  };
  const ch = {
    database: 'ingest',
    command: (q: string) => {
      commands.push(q);
      return Promise.resolve();
    },
    query: (q: string) => Promise.resolve(answer(q)),
    insert: (_table: string, rows: { version: number; status: string }[]) => {
      recorded.push(...rows);
      return Promise.resolve();
    },
  } as unknown as ClickHouse;
  return { ch, commands };
}

describe('applyPending with and without a cluster', () => {
  const logger = createLogger({ service: 'test', level: 'silent' });

  it('sends the files statements unchanged without a cluster (one server as before)', async () => {
    const migrations = await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR);
    const server = fakeServer();
    await applyPending(server.ch, migrations, logger);
    const applied = migrations.filter((m) => m.minServer === undefined).flatMap((m) => m.statements);
    expect(server.commands).toEqual([
      'CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, status String, applied_at DateTime) ENGINE = MergeTree ORDER BY version',
      // 18.16 refuses `ADD COLUMN IF NOT EXISTS`: the runner looked the column up and sends it without.
      ...applied.map((q) => q.replace(' ADD COLUMN IF NOT EXISTS ', ' ADD COLUMN ')),
    ]);
    expect(server.commands).toContain('ALTER TABLE events ADD COLUMN user_id String AFTER job_id');
  });

  it('adds a column once: skipped where system.columns has it, sent with IF NOT EXISTS to a server that takes it', async () => {
    const migration = parseMigration(
      '0099_columns.sql',
      'ALTER TABLE events ADD COLUMN IF NOT EXISTS user_id String;\nALTER TABLE events ADD COLUMN IF NOT EXISTS context String;',
    );
    const old = fakeServer('18.16.1', ['user_id']);
    await applyPending(old.ch, [migration], logger);
    expect(old.commands.slice(1)).toEqual(['ALTER TABLE events ADD COLUMN context String']);
    const current = fakeServer('24.8.4.1');
    await applyPending(current.ch, [migration], logger);
    expect(current.commands.slice(1)).toEqual([
      'ALTER TABLE events ADD COLUMN IF NOT EXISTS user_id String',
      'ALTER TABLE events ADD COLUMN IF NOT EXISTS context String',
    ]);
  });

  it('stops on two columns in one ADD COLUMN IF NOT EXISTS statement (only the first would be checked)', async () => {
    const migration = parseMigration('0099_two.sql', 'ALTER TABLE events ADD COLUMN IF NOT EXISTS a String, ADD COLUMN IF NOT EXISTS b String;');
    await expect(applyPending(fakeServer().ch, [migration], logger)).rejects.toThrow(/one ADD COLUMN IF NOT EXISTS per statement/);
  });

  it('sends every statement on the cluster, schema_migrations replicated too', async () => {
    const server = fakeServer();
    await applyPending(server.ch, await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR), logger, { cluster: 'ingest_cluster' });
    expect(server.commands[0]).toContain("ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/ingest/schema_migrations', '{replica}')");
    expect(server.commands.every((c) => c.includes(' ON CLUSTER ingest_cluster'))).toBe(true);
    // 0007's columns reach events_all, made by 0001 (a Distributed table keeps the columns it was made with): made again after each.
    const addUserId = server.commands.indexOf('ALTER TABLE ingest.events ON CLUSTER ingest_cluster ADD COLUMN user_id String AFTER job_id');
    expect(server.commands.slice(addUserId + 1, addUserId + 3)).toEqual([
      'DROP TABLE IF EXISTS ingest.events_all ON CLUSTER ingest_cluster',
      'CREATE TABLE IF NOT EXISTS ingest.events_all ON CLUSTER ingest_cluster AS ingest.events ENGINE = Distributed(ingest_cluster, ingest, events, sipHash64(account_id))',
    ]);
    expect(server.commands).toContain('DROP TABLE IF EXISTS ingest.events_dedup ON CLUSTER ingest_cluster');
    expect(server.commands.filter((c) => c.includes('ENGINE = Distributed')).map((c) => /ingest\.(\w+) ON/.exec(c)?.[1])).toEqual([
      'events_all',
      'usage_hourly_all',
      'events_daily_all',
      'billing_ledger_all',
      'audit_log_all',
      // 0007: made again after each of its three columns.
      'events_all',
      'events_all',
      'events_all',
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { CLICKHOUSE_MIGRATIONS_DIR } from '../paths.js';
import type { ClickHouse } from './client.js';
import { toClusterStatements } from './cluster-ddl.js';
import { applyPending, loadMigrations } from './migrations.js';
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
  });

  it('refuses a statement it cannot replicate, naming it', () => {
    expect(() => toClusterStatements('CREATE TABLE IF NOT EXISTS m (x UInt8) ENGINE = Memory', target)).toThrow(
      /cannot run on a cluster: a table without a MergeTree engine/,
    );
    expect(() => toClusterStatements('DROP TABLE events', target)).toThrow(/cannot run on a cluster: .*DROP TABLE events/);
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
          expect(sent, `${m.name}: ${sent}`).toMatch(/ ON CLUSTER ingest_cluster[\s]/);
          expect(sent, `${m.name}: ${sent}`).not.toMatch(/ENGINE = (Replacing|Summing|Aggregating)?MergeTree/);
        }
      }
    }
  });
});

/** A server that runs nothing, with the commands it was sent. */
function fakeServer() {
  const commands: string[] = [];
  const recorded: { version: number; status: string }[] = [];
  const ch = {
    database: 'ingest',
    command: (q: string) => {
      commands.push(q);
      return Promise.resolve();
    },
    query: (q: string) => Promise.resolve(q.startsWith('SELECT version()') ? [{ version: '18.16.1' }] : recorded.map((r) => ({ ...r }))),
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
      ...applied,
    ]);
  });

  it('sends every statement on the cluster, schema_migrations replicated too', async () => {
    const server = fakeServer();
    await applyPending(server.ch, await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR), logger, { cluster: 'ingest_cluster' });
    expect(server.commands[0]).toContain("ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/ingest/schema_migrations', '{replica}')");
    expect(server.commands.every((c) => c.includes(' ON CLUSTER ingest_cluster'))).toBe(true);
    expect(server.commands.filter((c) => c.includes('ENGINE = Distributed')).map((c) => /ingest\.(\w+) ON/.exec(c)?.[1])).toEqual([
      'events_all',
      'usage_hourly_all',
      'events_daily_all',
      'billing_ledger_all',
      'audit_log_all',
    ]);
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  applyPending,
  CLICKHOUSE_MIGRATIONS_DIR,
  type ClickHouse,
  clusterDatabase,
  createLogger,
  loadMigrations,
  parseMigration,
  toClusterStatements,
} from '@ingest/platform';
import { CHDB_ENGINES, type ChdbEngine, chdbClickHouse, startChdb } from '@ingest/testkit/chdb';
import { currentEventsDdl } from './events-upgrade.js';

/**
 * The ON CLUSTER statements of current servers (CLICKHOUSE_CLUSTER; docs/scale.md), parsed by the
 * current engines' own parser (EXPLAIN AST): ClickHouse Keeper and a current server with
 * remote_servers cannot run here, and chdb has no cluster, so these are parsed, not exercised.
 * 18.16 runs the same rewrite for real (the scale tests, on two replicas and ZooKeeper).
 */
const target = { cluster: 'ingest_cluster', database: 'ingest' };

describe.each(CHDB_ENGINES)('ON CLUSTER statements on $name (parsed)', ({ name, serverMajor }) => {
  let engine: ChdbEngine;
  let ch: ClickHouse;
  const sent: string[] = [];
  const parse = async (q: string) => void (await engine.run(`EXPLAIN AST ${q}`));
  // The migration runner on this engine's version, its DDL parsed instead of run.
  let parseOnly: ClickHouse;
  beforeAll(async () => {
    engine = await startChdb(name);
    ch = await chdbClickHouse(engine, 'ingest');
    parseOnly = {
      ...ch,
      command: async (q) => {
        sent.push(q);
        await parse(q);
      },
      query: async <T>(q: string) => (q.startsWith('SELECT version()') ? ch.query<T>(q) : []),
      insert: async () => {},
    };
  });
  afterAll(() => engine?.close());

  it('parses every statement the migration runner sends for the repository migrations, the current-server extras included', async () => {
    const result = await applyPending(parseOnly, await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR), createLogger({ service: 'chdb-test', level: 'silent' }), {
      cluster: target.cluster,
    });
    // 0005 (LowCardinality, codecs) on both; 0006 (the JSON column) where the engine has it.
    expect(result.applied).toContain('0005_current_rollups_ledger_audit');
    expect(result.applied.includes('0006_events_properties_json')).toBe(serverMajor >= 25);
    expect(sent.some((q) => q.includes("ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/ingest/events', '{replica}', inserted_at)"))).toBe(true);
    expect(sent.some((q) => q.startsWith('ALTER TABLE ingest.audit_log ON CLUSTER ingest_cluster MODIFY COLUMN at_ms Int64 CODEC(Delta, ZSTD(1))'))).toBe(true);
    expect(sent.every((q) => q.includes(' ON CLUSTER ingest_cluster'))).toBe(true);
  });

  it('parses a `-- needs:` migration of current-server types (DateTime64, codecs, LowCardinality) and the current events shape', async () => {
    const needs = parseMigration(
      '0099_current.sql',
      "-- needs: clickhouse >= 24.8\nCREATE TABLE IF NOT EXISTS t64 (account_id LowCardinality(String), at DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1))) ENGINE = ReplacingMergeTree(at) ORDER BY (account_id, at);",
    );
    for (const statement of needs.statements) for (const q of toClusterStatements(statement, target)) await parse(q);
    const currentEvents = currentEventsDdl('events', serverMajor >= 25).replace(/^CREATE TABLE events/, 'CREATE TABLE IF NOT EXISTS events');
    const statements = toClusterStatements(currentEvents, target);
    expect(statements).toHaveLength(2);
    for (const q of statements) await parse(q);
    await parse(clusterDatabase(target));
    await parse('DROP DATABASE IF EXISTS `ingest` ON CLUSTER `ingest_cluster`');
  });

  it('refuses what it cannot parse (the parser is really consulted)', async () => {
    await expect(parse('CREATE TABLE IF NOT EXISTS ingest.x ON CLUSTER ENGINE = Replicated')).rejects.toThrow();
  });
});

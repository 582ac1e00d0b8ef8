import { AppError } from '../errors.js';

/**
 * The migrations' statements for a ClickHouse cluster (CLICKHOUSE_CLUSTER, docs/scale.md,
 * "Replicated ClickHouse"). The migration files stay one list, written for a single server; on
 * a cluster each statement is rewritten here:
 *
 * - `CREATE TABLE|VIEW|MATERIALIZED VIEW IF NOT EXISTS x`, `ALTER TABLE x` and `DROP TABLE IF
 *   EXISTS x` (a view made again) run `ON CLUSTER`, with every table name qualified by the
 *   database: the servers run distributed DDL in their own sessions, whose default database is
 *   not the caller's.
 * - After `ALTER TABLE x ADD COLUMN …`, `x_all` is made again when that Distributed table exists
 *   (`distributedTables`, looked up by the runner): a Distributed table keeps the columns it was
 *   made with, so without it the new column could not be read across the shards. Made again, not
 *   altered: 18.16 refuses `ALTER … ON CLUSTER` of a table that is not replicated on a cluster
 *   whose shards replicate internally (code 371, measured), and a Distributed table holds no rows
 *   of its own (the services neither insert into nor read the `_all` tables).
 * - `*MergeTree(args)` becomes `Replicated*MergeTree('/clickhouse/tables/{shard}/<db>/<table>',
 *   '{replica}', args)`: the `{shard}`/`{replica}` macros come from each server's config, so one
 *   statement makes every replica.
 * - Each replicated table gets a `Distributed` table `<table>_all` over the cluster, sharded by
 *   `sipHash64(account_id)`: an account's rows, and so every copy of one event, live on one shard,
 *   so `FINAL` and `argMax(…, inserted_at)` stay exact per shard (docs/scale.md says why).
 *
 * A statement of any other form stops the run: a migration that would create an unreplicated
 * table on one server of a cluster is a bug to see at once, not a table that silently diverges.
 */
export interface ClusterTarget {
  cluster: string;
  database: string;
}

/** Where a table's replicas meet in ZooKeeper / ClickHouse Keeper. */
export function replicationPath(database: string, table: string): string {
  return `/clickhouse/tables/{shard}/${database}/${table}`;
}

export const DISTRIBUTED_SUFFIX = '_all';

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function checkClusterTarget(target: ClusterTarget): void {
  for (const [what, value] of [
    ['CLICKHOUSE_CLUSTER', target.cluster],
    ['CLICKHOUSE_DATABASE', target.database],
  ] as const) {
    if (!NAME.test(value)) throw new AppError('invalid_cluster', `${what} must be a plain name (letters, digits, _): ${JSON.stringify(value)}`);
  }
}

const CREATE_TABLE = /^CREATE TABLE IF NOT EXISTS (\w+)(\s)/;
const CREATE_VIEW = /^CREATE VIEW IF NOT EXISTS (\w+) AS(\s)/;
const CREATE_MV = /^CREATE MATERIALIZED VIEW IF NOT EXISTS (\w+) TO (\w+) AS(\s)/;
// Not `ALTER TABLE IF EXISTS x`: "IF" would be taken for the table.
const ALTER_TABLE = /^ALTER TABLE (?!IF EXISTS )(\w+) /;
const ADD_COLUMN = /^ALTER TABLE \w+ ADD COLUMN /;
const DROP_TABLE = /^DROP TABLE IF EXISTS (\w+)$/;
const ENGINE = /ENGINE = (Replacing|Summing|Aggregating|)MergeTree(?:\(([^)]*)\))?/;
const FROM = /\bFROM (\w+)\b/g;

/** The statements a migration statement becomes on a cluster (one, or a table and its Distributed table). */
export function toClusterStatements(statement: string, target: ClusterTarget, options: { distributedTables?: ReadonlySet<string> } = {}): string[] {
  checkClusterTarget(target);
  const { cluster, database: db } = target;
  const onCluster = `ON CLUSTER ${cluster}`;
  const text = statement.trim();

  let match = CREATE_TABLE.exec(text);
  if (match) {
    const table = match[1] ?? '';
    const engine = ENGINE.exec(text);
    if (!engine) throw unsupported(statement, 'a table without a MergeTree engine');
    const args = (engine[2] ?? '').trim();
    const replicated = `ENGINE = Replicated${engine[1] ?? ''}MergeTree('${replicationPath(db, table)}', '{replica}'${args ? `, ${args}` : ''})`;
    const created = text.replace(CREATE_TABLE, `CREATE TABLE IF NOT EXISTS ${db}.${table} ${onCluster}$2`).replace(ENGINE, replicated);
    const statements = [created];
    if (/\baccount_id\b/.test(text)) statements.push(distributedTable(table, target));
    return statements;
  }
  match = CREATE_MV.exec(text);
  if (match) {
    return [
      text.replace(CREATE_MV, `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.${match[1]} ${onCluster} TO ${db}.${match[2]} AS$3`).replace(FROM, `FROM ${db}.$1`),
    ];
  }
  match = CREATE_VIEW.exec(text);
  if (match) {
    return [text.replace(CREATE_VIEW, `CREATE VIEW IF NOT EXISTS ${db}.${match[1]} ${onCluster} AS$2`).replace(FROM, `FROM ${db}.$1`)];
  }
  match = ALTER_TABLE.exec(text);
  if (match) {
    const table = match[1] ?? '';
    const altered = text.replace(ALTER_TABLE, `ALTER TABLE ${db}.${table} ${onCluster} `);
    if (!ADD_COLUMN.test(text) || !options.distributedTables?.has(`${table}${DISTRIBUTED_SUFFIX}`)) return [altered];
    return [altered, `DROP TABLE IF EXISTS ${db}.${table}${DISTRIBUTED_SUFFIX} ${onCluster}`, distributedTable(table, target)];
  }
  match = DROP_TABLE.exec(text);
  if (match) return [`DROP TABLE IF EXISTS ${db}.${match[1]} ${onCluster}`];
  throw unsupported(statement, 'a statement of a form the cluster rewrite does not know');
}

/** `<table>_all`: reads across every shard; each server forwards to one healthy replica per shard. */
export function distributedTable(table: string, target: ClusterTarget): string {
  const { cluster, database: db } = target;
  return `CREATE TABLE IF NOT EXISTS ${db}.${table}${DISTRIBUTED_SUFFIX} ON CLUSTER ${cluster} AS ${db}.${table} ENGINE = Distributed(${cluster}, ${db}, ${table}, sipHash64(account_id))`;
}

/** The runner's own bookkeeping, replicated too: any server of the cluster knows what was applied. */
export function clusterMigrationsTable(target: ClusterTarget): string {
  checkClusterTarget(target);
  const { cluster, database: db } = target;
  return `CREATE TABLE IF NOT EXISTS ${db}.schema_migrations ON CLUSTER ${cluster} (version UInt32, name String, status String, applied_at DateTime) ENGINE = ReplicatedMergeTree('${replicationPath(db, 'schema_migrations')}', '{replica}') ORDER BY version`;
}

export function clusterDatabase(target: ClusterTarget): string {
  checkClusterTarget(target);
  return `CREATE DATABASE IF NOT EXISTS ${target.database} ON CLUSTER ${target.cluster}`;
}

function unsupported(statement: string, what: string): AppError {
  const head = statement.trim().split('\n')[0]?.slice(0, 120) ?? '';
  return new AppError('invalid_migration', `cannot run on a cluster: ${what} (CLICKHOUSE_CLUSTER; docs/scale.md): ${head}`);
}

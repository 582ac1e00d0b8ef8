import type { ClickHouse } from './client.js';
import { ident, literal } from './sql.js';

/**
 * The SQL of a logical backup and restore of one database (`ingest backup` / `ingest restore`
 * stream the rows themselves): which tables hold data, their columns and partitions, the
 * statements a partition is read and written with, and the materialized views a restore
 * detaches. Runs on 18.16 and current servers (system tables and columns both have); nothing
 * here assumes a column's type.
 */

export interface ColumnSpec {
  name: string;
  type: string;
}

export interface DataTable {
  name: string;
  engine: string;
  /** `system.tables.partition_key`; empty for an unpartitioned table. */
  partitionKey: string;
}

/** The tables that hold data: every *MergeTree of the database (not views, materialized views or Distributed tables). */
export async function dataTables(ch: ClickHouse, database: string): Promise<DataTable[]> {
  const rows = await ch.query<{ name: string; engine: string; partition_key: string }>(
    `SELECT name, engine, partition_key FROM system.tables WHERE database = ${literal(database)} AND engine LIKE '%MergeTree' ORDER BY name`,
  );
  return rows.map((r) => ({ name: r.name, engine: r.engine, partitionKey: r.partition_key }));
}

/** Materialized views of the database, which a restore detaches while it inserts. */
export async function materializedViews(ch: ClickHouse, database: string): Promise<string[]> {
  const rows = await ch.query<{ name: string }>(
    `SELECT name FROM system.tables WHERE database = ${literal(database)} AND engine = 'MaterializedView' ORDER BY name`,
  );
  return rows.map((r) => r.name);
}

/** The columns an INSERT can write, in table order (MATERIALIZED and ALIAS columns are computed, not stored from input). */
export function insertableColumns(ch: ClickHouse, database: string, table: string): Promise<ColumnSpec[]> {
  return ch.query<ColumnSpec>(
    `SELECT name, type FROM system.columns WHERE database = ${literal(database)} AND table = ${literal(table)} AND default_kind NOT IN ('MATERIALIZED', 'ALIAS')`,
  );
}

export async function rowCount(ch: ClickHouse, database: string, table: string): Promise<number> {
  const [row] = await ch.query<{ n: string | number }>(`SELECT count() AS n FROM ${ident(database).text}.${ident(table).text}`);
  return Number(row?.n ?? 0);
}

/** The partitions of the table's active parts: `partition` as a SQL literal, `partition_id` fit for a file name. */
export function tablePartitions(ch: ClickHouse, database: string, table: string): Promise<{ partition: string; partition_id: string }[]> {
  return ch.query<{ partition: string; partition_id: string }>(
    `SELECT partition, partition_id FROM system.parts WHERE database = ${literal(database)} AND table = ${literal(table)} AND active GROUP BY partition, partition_id ORDER BY partition_id`,
  );
}

/** The migration versions `schema_migrations` records. */
export async function appliedMigrationVersions(ch: ClickHouse, database: string): Promise<number[]> {
  const rows = await ch.query<{ version: string | number }>(`SELECT DISTINCT version FROM ${ident(database).text}.schema_migrations ORDER BY version`);
  return rows.map((r) => Number(r.version));
}

export async function serverVersion(ch: ClickHouse): Promise<string> {
  const [row] = await ch.query<{ v: string }>('SELECT version() AS v');
  return row?.v ?? 'unknown';
}

/**
 * Settings of a restore's inserts on this server. Servers since 20.x merge rows of one insert
 * block that share a sorting key in Replacing/Aggregating tables (`optimize_on_insert`): a
 * restore would then hold fewer rows than the source (the same after a merge or FINAL, but no
 * longer the same table). Off where the setting exists; 18.16 has no such step (and refuses
 * settings it does not know).
 */
export async function restoreInsertSettings(ch: ClickHouse): Promise<Record<string, string>> {
  const rows = await ch.query<{ name: string }>(`SELECT name FROM system.settings WHERE name = 'optimize_on_insert'`);
  return rows.length > 0 ? { optimize_on_insert: '0' } : {};
}

/**
 * Detaches (`attach: false`) or attaches a table or view again. A detached view stays in the
 * database's metadata: a server restart attaches it again, so a restore that died cannot lose it.
 */
export async function setAttached(ch: ClickHouse, database: string, table: string, attach: boolean): Promise<void> {
  await ch.command(`${attach ? 'ATTACH' : 'DETACH'} TABLE ${ident(database).text}.${ident(table).text}`);
}

/** The SELECT of one partition's rows, the columns in the given order (the caller appends FORMAT). */
export function selectOfPartition(database: string, table: DataTable, columns: readonly ColumnSpec[], partition: string): string {
  const select = `SELECT ${columns.map((c) => ident(c.name).text).join(', ')} FROM ${ident(database).text}.${ident(table.name).text}`;
  if (table.partitionKey.trim() === '') return select;
  // A tuple key shows its value as (a, b); a single expression as a plain literal.
  const key = partition.startsWith('(') && !table.partitionKey.trim().startsWith('(') ? `tuple(${table.partitionKey})` : `(${table.partitionKey})`;
  return `${select} WHERE ${key} = ${partition}`;
}

/** The INSERT a dumped partition's TabSeparated rows follow. */
export function insertStatement(database: string, table: string, columns: readonly ColumnSpec[]): string {
  return `INSERT INTO ${ident(database).text}.${ident(table).text} (${columns.map((c) => ident(c.name).text).join(', ')}) FORMAT TabSeparated`;
}

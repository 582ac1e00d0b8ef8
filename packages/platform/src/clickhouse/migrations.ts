import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { type ClickHouse, createClickHouse } from './client.js';
import { clusterDatabase, clusterMigrationsTable, toClusterStatements } from './cluster-ddl.js';
import { ident, literal, sql } from './sql.js';

/**
 * Numbered SQL files (`0001_events.sql`), applied in order, each once, recorded in
 * `schema_migrations`. Statements are separated by a `;` at the end of a line because the HTTP
 * interface takes one statement per request.
 *
 * A file whose first line is `-- requires: clickhouse >= N` (or `>= N.M`, e.g. `>= 24.8`) is an
 * optional extra for newer servers (DateTime64, TTL, ...): it is skipped, and recorded as
 * skipped, on older ones; once the server is upgraded far enough, the next run applies it.
 * A file whose first line is `-- needs: clickhouse >= N.M` is not optional: against an older
 * server the run stops before applying anything, naming the version it needs. Every run needs at
 * least MIN_CLICKHOUSE (18.16), the oldest server the schema is written for.
 */
export interface Migration {
  version: number;
  name: string;
  statements: string[];
  /** From `-- requires: clickhouse >= N[.M]`: the oldest server version it applies on. */
  minServer?: { major: number; minor: number };
  /** `needs` (stop on older servers) or `requires` (skip there). */
  onOlder?: 'stop' | 'skip';
}

/** The oldest ClickHouse the migrations are written for (docs/clickhouse.md). */
export const MIN_CLICKHOUSE = { major: 18, minor: 16 } as const;

const FILE_PATTERN = /^(\d{4})_([a-z0-9_]+)\.sql$/;
const REQUIRES_PATTERN = /^--\s*(requires|needs):\s*clickhouse\s*>=\s*(\d+)(?:\.(\d+))?/i;

export function parseMigration(fileName: string, text: string): Migration {
  const match = FILE_PATTERN.exec(fileName);
  if (!match) throw new AppError('invalid_migration', `migration file name must look like 0001_name.sql: ${fileName}`);
  const requires = REQUIRES_PATTERN.exec(text.trimStart());
  const statements = text
    .split(/;\s*$/m)
    .map((s) =>
      s
        .split('\n')
        .filter((line) => !line.trim().startsWith('--'))
        .join('\n')
        .trim(),
    )
    .filter((s) => s.length > 0);
  if (statements.length === 0) throw new AppError('invalid_migration', `migration ${fileName} has no statements`);
  return {
    version: Number(match[1]),
    name: match[2] ?? fileName,
    statements,
    ...(requires
      ? {
          minServer: { major: Number(requires[2]), minor: Number(requires[3] ?? 0) },
          onOlder: requires[1]?.toLowerCase() === 'needs' ? ('stop' as const) : ('skip' as const),
        }
      : {}),
  };
}

/** Whether a server of `version` (`SELECT version()`, e.g. `24.8.4.1`) is at least `min`. */
export function serverAtLeast(version: string, min: { major: number; minor: number }): boolean {
  const [major = 0, minor = 0] = version.split('.').map((n) => Number.parseInt(n, 10) || 0);
  return major > min.major || (major === min.major && minor >= min.minor);
}

export async function loadMigrations(dir: string): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations = await Promise.all(files.map(async (f) => parseMigration(f, await readFile(join(dir, f), 'utf8'))));
  const versions = new Set<number>();
  for (const m of migrations) {
    if (versions.has(m.version)) throw new AppError('invalid_migration', `duplicate migration version ${m.version}`);
    versions.add(m.version);
  }
  return migrations;
}

export interface MigrateOptions {
  url: string;
  username?: string;
  password?: string;
  database: string;
  dir: string;
  logger: Logger;
  /** CLICKHOUSE_CLUSTER: run every statement ON CLUSTER, replicated (cluster-ddl.ts); empty or absent: one server. */
  cluster?: string;
}

export interface MigrateResult {
  applied: string[];
  skipped: string[];
  serverVersion: string;
}

export async function migrate(options: MigrateOptions): Promise<MigrateResult> {
  const log = options.logger.child({ component: 'migrations', database: options.database });
  const server = createClickHouse({ url: options.url, username: options.username, password: options.password });
  try {
    await server.command(
      options.cluster ? clusterDatabase({ cluster: options.cluster, database: options.database }) : `CREATE DATABASE IF NOT EXISTS ${ident(options.database)}`,
    );
  } finally {
    await server.close();
  }
  const ch = createClickHouse({ url: options.url, username: options.username, password: options.password, database: options.database });
  try {
    return await applyPending(ch, await loadMigrations(options.dir), log, options.cluster ? { cluster: options.cluster } : {});
  } finally {
    await ch.close();
  }
}

/**
 * Applies what `schema_migrations` does not list yet, on a client already in the database. With
 * `cluster`, every statement runs ON CLUSTER on replicated tables (cluster-ddl.ts); without, the
 * statements are the files' own, exactly.
 */
export async function applyPending(ch: ClickHouse, migrations: Migration[], log: Logger, options: { cluster?: string } = {}): Promise<MigrateResult> {
  const target = options.cluster ? { cluster: options.cluster, database: ch.database } : undefined;
  await ch.command(
    target
      ? clusterMigrationsTable(target)
      : 'CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, status String, applied_at DateTime) ENGINE = MergeTree ORDER BY version',
  );
  const [{ version: serverVersion } = { version: '0' }] = await ch.query<{ version: string }>('SELECT version() AS version');
  const label = (m: Migration) => `${String(m.version).padStart(4, '0')}_${m.name}`;
  const tooOld = (m: Migration) => m.minServer !== undefined && !serverAtLeast(serverVersion, m.minServer);
  if (!serverAtLeast(serverVersion, MIN_CLICKHOUSE)) {
    throw new AppError('server_too_old', `the migrations need ClickHouse >= ${MIN_CLICKHOUSE.major}.${MIN_CLICKHOUSE.minor}; this server is ${serverVersion}`);
  }
  const recorded = await ch.query<{ version: number; status: string }>('SELECT version, status FROM schema_migrations');
  const applied = new Set(recorded.filter((r) => r.status === 'applied').map((r) => Number(r.version)));
  const skippedBefore = new Set(recorded.filter((r) => r.status === 'skipped').map((r) => Number(r.version)));
  // Done: applied, or skipped before and still too new for this server (an upgraded server applies it now).
  const pending = migrations.filter((m) => !applied.has(m.version) && !(skippedBefore.has(m.version) && tooOld(m)));
  const stopper = pending.find((m) => m.onOlder === 'stop' && tooOld(m));
  if (stopper?.minServer) {
    throw new AppError(
      'server_too_old',
      `migration ${label(stopper)} needs ClickHouse >= ${stopper.minServer.major}.${stopper.minServer.minor}; this server is ${serverVersion} (nothing was applied)`,
    );
  }

  const result: MigrateResult = { applied: [], skipped: [], serverVersion };
  for (const m of pending) {
    const skip = tooOld(m);
    if (!skip) {
      for (const statement of m.statements) {
        const distributedTables = target && ADD_COLUMN.test(statement) ? await distributedTablesOf(ch) : undefined;
        for (const sent of target ? toClusterStatements(statement, target, { distributedTables }) : [statement]) {
          const command = await addColumnCommand(ch, sent, serverVersion);
          if (command === undefined) log.info({ migration: label(m), statement: sent.slice(0, 120) }, 'column already there; statement skipped');
          else await ch.command(command);
        }
      }
    }
    await ch.insert('schema_migrations', [
      { version: m.version, name: m.name, status: skip ? 'skipped' : 'applied', applied_at: Math.floor(Date.now() / 1000) },
    ]);
    (skip ? result.skipped : result.applied).push(label(m));
    log.info(
      { migration: label(m), serverVersion, skipped: skip, cluster: options.cluster },
      skip ? 'migration skipped on this server version' : 'migration applied',
    );
  }
  return result;
}

/** Servers that take `ADD COLUMN IF NOT EXISTS` (18.16 does not: a syntax error; 24.8 and later do, measured on chdb). */
export const ADD_COLUMN_IF_NOT_EXISTS_SINCE = { major: 20, minor: 1 } as const;

const ADD_COLUMN = /^ALTER TABLE (?:\w+\.)?(\w+)(?: ON CLUSTER \w+)? ADD COLUMN IF NOT EXISTS (\w+)\b/;

/**
 * What to send for one statement: an `ALTER TABLE t ADD COLUMN IF NOT EXISTS c …` is looked up in
 * system.columns first (undefined: the column is there, send nothing), and sent without `IF NOT
 * EXISTS` to a server that refuses it; so the same file adds a column once on 18.16 and on current
 * servers, also when the column came otherwise (the current `events` shape has it from the start).
 * One column per statement: a second `ADD COLUMN` in it would go unchecked, so it stops the run.
 * Every other statement is sent as it is.
 */
async function addColumnCommand(ch: ClickHouse, statement: string, serverVersion: string): Promise<string | undefined> {
  const match = ADD_COLUMN.exec(statement);
  if (!match) return statement;
  if (/,\s*ADD COLUMN/i.test(statement)) {
    throw new AppError('invalid_migration', `one ADD COLUMN IF NOT EXISTS per statement (each is checked in system.columns): ${statement.slice(0, 120)}`);
  }
  const [, table = '', column = ''] = match;
  const found = await ch.query<{ name: string }>(
    `SELECT name FROM system.columns WHERE database = currentDatabase() AND table = ${literal(table)} AND name = ${literal(column)}`,
  );
  if (found.length > 0) return undefined;
  return serverAtLeast(serverVersion, ADD_COLUMN_IF_NOT_EXISTS_SINCE) ? statement : statement.replace(' ADD COLUMN IF NOT EXISTS ', ' ADD COLUMN ');
}

/** The Distributed tables of the database: a column added to a table goes to its `<table>_all` too. */
async function distributedTablesOf(ch: ClickHouse): Promise<ReadonlySet<string>> {
  const rows = await ch.query<{ name: string }>("SELECT name FROM system.tables WHERE database = currentDatabase() AND engine = 'Distributed'");
  return new Set(rows.map((r) => r.name));
}

export async function dropDatabase(options: Omit<MigrateOptions, 'dir' | 'logger'>): Promise<void> {
  const server = createClickHouse({ url: options.url, username: options.username, password: options.password });
  try {
    await server.command(
      options.cluster
        ? sql`DROP DATABASE IF EXISTS ${ident(options.database)} ON CLUSTER ${ident(options.cluster)}`
        : sql`DROP DATABASE IF EXISTS ${ident(options.database)}`,
    );
  } finally {
    await server.close();
  }
}

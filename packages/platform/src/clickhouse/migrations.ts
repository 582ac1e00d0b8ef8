import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { type ClickHouse, createClickHouse } from './client.js';
import { ident, sql } from './sql.js';

/**
 * Numbered SQL files (`0001_events.sql`), applied in order, each once, recorded in
 * `schema_migrations`. Statements are separated by a `;` at the end of a line because the HTTP
 * interface takes one statement per request.
 *
 * A file whose first line is `-- requires: clickhouse >= N` (or `>= N.M`, e.g. `>= 24.8`) is an
 * optional extra for newer servers (DateTime64, TTL, ...): it is skipped, and recorded as
 * skipped, on older ones.
 */
export interface Migration {
  version: number;
  name: string;
  statements: string[];
  /** From `-- requires: clickhouse >= N[.M]`: the oldest server version it applies on. */
  minServer?: { major: number; minor: number };
}

const FILE_PATTERN = /^(\d{4})_([a-z0-9_]+)\.sql$/;
const REQUIRES_PATTERN = /^--\s*requires:\s*clickhouse\s*>=\s*(\d+)(?:\.(\d+))?/i;

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
    ...(requires ? { minServer: { major: Number(requires[1]), minor: Number(requires[2] ?? 0) } } : {}),
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
    await server.command(`CREATE DATABASE IF NOT EXISTS ${ident(options.database)}`);
  } finally {
    await server.close();
  }
  const ch = createClickHouse({ url: options.url, username: options.username, password: options.password, database: options.database });
  try {
    return await applyPending(ch, await loadMigrations(options.dir), log);
  } finally {
    await ch.close();
  }
}

/** Applies what `schema_migrations` does not list yet, on a client already in the database. */
export async function applyPending(ch: ClickHouse, migrations: Migration[], log: Logger): Promise<MigrateResult> {
  await ch.command(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version UInt32, name String, status String, applied_at DateTime) ENGINE = MergeTree ORDER BY version',
  );
  const [{ version: serverVersion } = { version: '0' }] = await ch.query<{ version: string }>('SELECT version() AS version');
  const done = new Set((await ch.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => Number(r.version)));

  const result: MigrateResult = { applied: [], skipped: [], serverVersion };
  for (const m of migrations) {
    if (done.has(m.version)) continue;
    const label = `${String(m.version).padStart(4, '0')}_${m.name}`;
    const skip = m.minServer !== undefined && !serverAtLeast(serverVersion, m.minServer);
    if (!skip) {
      for (const statement of m.statements) await ch.command(statement);
    }
    await ch.insert('schema_migrations', [
      { version: m.version, name: m.name, status: skip ? 'skipped' : 'applied', applied_at: Math.floor(Date.now() / 1000) },
    ]);
    (skip ? result.skipped : result.applied).push(label);
    log.info({ migration: label, serverVersion, skipped: skip }, skip ? 'migration skipped on this server version' : 'migration applied');
  }
  return result;
}

export async function dropDatabase(options: Omit<MigrateOptions, 'dir' | 'logger'>): Promise<void> {
  const server = createClickHouse({ url: options.url, username: options.username, password: options.password });
  try {
    await server.command(sql`DROP DATABASE IF EXISTS ${ident(options.database)}`);
  } finally {
    await server.close();
  }
}

import { createHash, randomBytes } from 'node:crypto';
import { AppError } from '../errors.js';
import type { ClickHouse } from './client.js';
import { ident, literal } from './sql.js';

/**
 * A per-account ClickHouse reader for an account's data engineers (docs/clickhouse-readers.md):
 * a SQL user that sees only its account's rows (a row policy per table), reads only the tables
 * below, changes no setting, and is bounded by a settings profile and a quota so that it cannot
 * starve the writer. One per account: `reader_<accountId>`.
 *
 * Only servers with SQL-driven access control (20.4 and later) can enforce it. ClickHouse 18.16
 * has neither SQL users nor row filters in users.xml (it ignores a `<databases>` filter: a reader
 * configured so reads every account, measured by tenant-reader.integration.test.ts), and its
 * views check the reader's rights on the tables they read, so no per-account view can stand in.
 * There a reader is refused rather than handed out unrestricted.
 */

/** The tables a reader may read, each with its row policy. The audit log is not per-account reading; the *_mv views are writers. */
export const TENANT_READER_TABLES = ['events', 'events_dedup', 'usage_hourly', 'events_daily', 'billing_ledger'] as const;

/**
 * The reader's settings profile. readonly = 1: reads only and no setting may be changed (so the
 * limits below hold; a tool that sends settings gets error 164). The limits bound one query and
 * how many run at once, leaving the writer and the services their share of a server.
 */
export const TENANT_READER_SETTINGS = {
  readonly: 1,
  /** Seconds per query. */
  max_execution_time: 60,
  /** Bytes of memory per query (2 GB). */
  max_memory_usage: 2_000_000_000,
  /** Threads per query: at most this many of the server's cores. */
  max_threads: 2,
  /** Rows and bytes of one answer. */
  max_result_rows: 1_000_000,
  max_result_bytes: 1_000_000_000,
  /** Queries of this reader at once (the writer's inserts are another user's). */
  max_concurrent_queries_for_user: 2,
} as const;

/** The reader's quota, per hour: queries, rows read and execution seconds (all its queries together). */
export const TENANT_READER_QUOTA = {
  intervalSeconds: 3600,
  queries: 1_000,
  read_rows: 10_000_000_000,
  execution_time: 1_800,
} as const;

/** Everyone else's row policy on each table: without it, any row policy on a table hides its rows from users the policy does not name. */
export const ALL_ROWS_POLICY = 'ingest_all_rows';

/** Account ids are `acc_` + base62; a reader is named after one, so anything else is refused. */
const READER_ACCOUNT_ID = /^[A-Za-z0-9_-]{1,100}$/;

/** `reader_<accountId>`: the user, its row policies, settings profile and quota share the name. */
export function tenantReaderName(accountId: string): string {
  if (!READER_ACCOUNT_ID.test(accountId)) throw new AppError('invalid_identifier', 'an account id of letters, digits, _ and - only');
  return `reader_${accountId}`;
}

/** A new password (shown once) and the SHA-256 the server keeps; only the hash is sent or stored. */
export function newReaderPassword(): { password: string; sha256Hex: string } {
  const password = randomBytes(24).toString('base64url');
  return { password, sha256Hex: createHash('sha256').update(password, 'utf8').digest('hex') };
}

function settingsList(): string {
  return Object.entries(TENANT_READER_SETTINGS)
    .map(([name, value]) => `${name} = ${value}`)
    .join(', ');
}

function table(database: string, name: string): string {
  return `${ident(database).text}.${ident(name).text}`;
}

/**
 * Creates the reader (CREATE USER fails when it exists: the caller answers 409). The password
 * travels as its SHA-256 (`sha256_hash`), so neither the server's query log nor ours holds it.
 */
export function createTenantReaderStatements(input: { accountId: string; database: string; sha256Hex: string }): string[] {
  const name = ident(tenantReaderName(input.accountId)).text;
  return [
    `CREATE SETTINGS PROFILE OR REPLACE ${name} SETTINGS ${settingsList()}`,
    `CREATE USER ${name} IDENTIFIED WITH sha256_hash BY ${literal(input.sha256Hex)} DEFAULT DATABASE ${ident(input.database).text} SETTINGS PROFILE ${literal(tenantReaderName(input.accountId))}`,
    ...TENANT_READER_TABLES.flatMap((t) => [
      `GRANT SELECT ON ${table(input.database, t)} TO ${name}`,
      // Permissive for everyone, so the services and other users keep every row once the table has a policy.
      `CREATE ROW POLICY IF NOT EXISTS ${ident(ALL_ROWS_POLICY).text} ON ${table(input.database, t)} AS PERMISSIVE FOR SELECT USING 1 TO ALL`,
      // Restrictive for the reader: ANDed with the one above.
      `CREATE ROW POLICY OR REPLACE ${name} ON ${table(input.database, t)} AS RESTRICTIVE FOR SELECT USING account_id = ${literal(input.accountId)} TO ${name}`,
    ]),
    `CREATE QUOTA OR REPLACE ${name} FOR INTERVAL ${TENANT_READER_QUOTA.intervalSeconds} second MAX queries = ${TENANT_READER_QUOTA.queries}, read_rows = ${TENANT_READER_QUOTA.read_rows}, execution_time = ${TENANT_READER_QUOTA.execution_time} TO ${name}`,
  ];
}

/** A new password for an existing reader (its sessions keep running until they end). */
export function rotateTenantReaderStatements(input: { accountId: string; sha256Hex: string }): string[] {
  return [`ALTER USER ${ident(tenantReaderName(input.accountId)).text} IDENTIFIED WITH sha256_hash BY ${literal(input.sha256Hex)}`];
}

/** Removes the reader and what was made for it; the all-rows policies stay (harmless, and other readers need them). */
export function removeTenantReaderStatements(input: { accountId: string; database: string }): string[] {
  const name = ident(tenantReaderName(input.accountId)).text;
  return [
    `DROP USER IF EXISTS ${name}`,
    ...TENANT_READER_TABLES.map((t) => `DROP ROW POLICY IF EXISTS ${name} ON ${table(input.database, t)}`),
    `DROP QUOTA IF EXISTS ${name}`,
    `DROP SETTINGS PROFILE IF EXISTS ${name}`,
  ];
}

/** Whether the reader exists (system.users, current servers only). */
export function tenantReaderExistsQuery(accountId: string): string {
  return `SELECT count() AS n FROM system.users WHERE name = ${literal(tenantReaderName(accountId))}`;
}

/** The server's version (`SELECT version()`), to decide whether it can enforce a reader. */
export async function clickhouseServerVersion(ch: ClickHouse): Promise<string> {
  const [row] = await ch.query<{ v: string }>('SELECT version() AS v');
  return row?.v ?? '0';
}

/** Whether the account's reader exists (system.users: current servers only). */
export async function tenantReaderExists(ch: ClickHouse, accountId: string): Promise<boolean> {
  const [row] = await ch.query<{ n: string | number }>(tenantReaderExistsQuery(accountId));
  return Number(row?.n ?? 0) > 0;
}

/**
 * Creates the reader through `ch` (a user that may manage access); on a failure part-way it
 * removes what it made, so no user without its row policies stays behind.
 */
export async function createTenantReader(ch: ClickHouse, input: { accountId: string; database: string; sha256Hex: string }): Promise<void> {
  try {
    for (const statement of createTenantReaderStatements(input)) await ch.command(statement);
  } catch (err) {
    await removeTenantReader(ch, input).catch(() => undefined);
    throw err;
  }
}

export async function rotateTenantReader(ch: ClickHouse, input: { accountId: string; sha256Hex: string }): Promise<void> {
  for (const statement of rotateTenantReaderStatements(input)) await ch.command(statement);
}

export async function removeTenantReader(ch: ClickHouse, input: { accountId: string; database: string }): Promise<void> {
  for (const statement of removeTenantReaderStatements(input)) await ch.command(statement);
}

/**
 * The console's access user (CLICKHOUSE_ACCESS_USER), made by `ingest setup` on current servers:
 * the rights to manage readers and nothing else (not ACCESS MANAGEMENT, which holds ROLE ADMIN:
 * granting any role to anyone), and SELECT on the service's tables with GRANT OPTION, which it
 * hands on to readers. The password travels as its SHA-256. Re-applied on every run.
 */
export function accessUserStatements(user: string, password: string, database: string): string[] {
  const name = ident(user).text;
  const hash = literal(createHash('sha256').update(password, 'utf8').digest('hex'));
  const db = ident(database).text;
  return [
    `CREATE USER IF NOT EXISTS ${name} IDENTIFIED WITH sha256_hash BY ${hash}`,
    `ALTER USER ${name} IDENTIFIED WITH sha256_hash BY ${hash}`,
    `GRANT CREATE USER, ALTER USER, DROP USER, SHOW USERS, CREATE SETTINGS PROFILE, ALTER SETTINGS PROFILE, DROP SETTINGS PROFILE, CREATE QUOTA, ALTER QUOTA, DROP QUOTA ON *.* TO ${name}`,
    `GRANT CREATE ROW POLICY, ALTER ROW POLICY, DROP ROW POLICY ON ${db}.* TO ${name}`,
    `GRANT SELECT ON ${db}.* TO ${name} WITH GRANT OPTION`,
  ];
}

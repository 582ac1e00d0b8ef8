import { ident, literal } from './sql.js';

/**
 * The settings of the gateway's read-only ClickHouse user, the same on every server:
 * deploy/clickhouse/server/users.xml (profile `readonly`) on 18.16, CREATE/ALTER USER below on
 * current ones (a unit test keeps the two equal).
 *
 * readonly = 1: reads only, and no setting may be changed per query. The reader therefore sends
 * none: no `SETTINGS` clause in its SQL and no setting in the URL (wait_end_of_query, query_id
 * and database are parameters of the HTTP interface, not settings). What a query of the gateway
 * may cost is bounded here instead. readonly = 2 would let the reader change any setting but
 * `readonly` (18.16 has no settings constraints to narrow that), so it is not used.
 */
export const READER_SETTINGS = {
  readonly: 1,
  /** Seconds: the longest read of the gateway and the dashboard (a read-back, 90 days of usage). */
  max_execution_time: 10,
} as const;

/** `readonly = 1, max_execution_time = 10`: READER_SETTINGS as a SETTINGS list. */
export function readerSettingsSql(): string {
  return Object.entries(READER_SETTINGS)
    .map(([name, value]) => `${name} = ${value}`)
    .join(', ');
}

/**
 * The gateway's read-only ClickHouse user on a current server (SQL-driven access control, 20.x
 * and later): SELECT on the service's database only, with READER_SETTINGS. ClickHouse 18.16 has
 * no CREATE USER: there the user comes from users.xml (deploy/clickhouse/server/users.xml,
 * profile `readonly`). `npm run setup` runs these when CLICKHOUSE_READER_USER and
 * CLICKHOUSE_READER_PASSWORD are set and the server allows it.
 */
export function readerUserStatements(user: string, password: string, database: string): string[] {
  return [
    `CREATE USER IF NOT EXISTS ${literal(ident(user))} IDENTIFIED WITH sha256_password BY ${literal(password)} SETTINGS ${readerSettingsSql()}`,
    // A changed password and the settings (ALTER USER … SETTINGS replaces them all) are applied on
    // every setup run, so a user made by an older setup gets the current ones.
    `ALTER USER ${literal(ident(user))} IDENTIFIED WITH sha256_password BY ${literal(password)} SETTINGS ${readerSettingsSql()}`,
    `GRANT SELECT ON ${literal(ident(database))}.* TO ${literal(ident(user))}`,
  ];
}

/** SQL-driven access control exists from ClickHouse 20.4 on. */
export function serverHasSqlUsers(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 20 || (major === 20 && minor >= 4);
}

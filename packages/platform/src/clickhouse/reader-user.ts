import { ident, literal } from './sql.js';

/**
 * The gateway's read-only ClickHouse user on a current server (SQL-driven access control, 20.x
 * and later): SELECT on the service's database only, with readonly = 1 (no writes, no DDL, no
 * settings changed per query). ClickHouse 18.16 has no CREATE USER: there the user comes from
 * users.xml (deploy/clickhouse/server/users.xml, profile `readonly`). `npm run setup` runs these
 * when CLICKHOUSE_READER_USER and CLICKHOUSE_READER_PASSWORD are set and the server allows it.
 */
export function readerUserStatements(user: string, password: string, database: string): string[] {
  return [
    `CREATE USER IF NOT EXISTS ${literal(ident(user))} IDENTIFIED WITH sha256_password BY ${literal(password)} SETTINGS readonly = 1`,
    // A password changed in the setting is applied on the next setup run.
    `ALTER USER ${literal(ident(user))} IDENTIFIED WITH sha256_password BY ${literal(password)}`,
    `GRANT SELECT ON ${literal(ident(database))}.* TO ${literal(ident(user))}`,
  ];
}

/** SQL-driven access control exists from ClickHouse 20.4 on. */
export function serverHasSqlUsers(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 20 || (major === 20 && minor >= 4);
}

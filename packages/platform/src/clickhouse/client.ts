import { Readable } from 'node:stream';
import { createClient } from '@clickhouse/client';
import type { Closeable } from '../lifecycle.js';
import { toClickHouseAppError } from './errors.js';

/**
 * The small surface the rest of the code uses. It pins the choices that keep one code path
 * working on ClickHouse 18.16 and current versions: JSONEachRow for inserts, buffered reads
 * with wait_end_of_query (so a late error cannot hide in a 200), no server-side parameters.
 */
export interface ClickHouse extends Closeable {
  readonly database: string;
  /** Rows must carry every column: 18.16 fills omitted keys with zero values, not DEFAULTs. */
  insert(table: string, rows: readonly Record<string, unknown>[]): Promise<void>;
  /**
   * Rows already encoded as TabSeparated lines (no trailing newline), for the hot path: no
   * object per row and no JSON escaping of JSON text held in String columns. `columns` names
   * every column in line order (18.16 gives omitted ones zero values, not DEFAULTs).
   */
  insertTabSeparated(table: string, columns: readonly string[], lines: readonly string[]): Promise<void>;
  /** SQL must be built with `sql`/`literal` from ./sql.ts. */
  query<T = Record<string, unknown>>(query: string): Promise<T[]>;
  command(query: string): Promise<void>;
  ping(): Promise<boolean>;
}

export interface ClickHouseOptions {
  url: string;
  username?: string;
  password?: string;
  /** Default database for unqualified table names; omit to use the server's default. */
  database?: string;
  requestTimeoutMs?: number;
  /**
   * For statements that run for minutes (the events upgrade's INSERT … SELECT): the server sends
   * progress headers every 10 s so proxies keep the idle connection open. Writers only (a setting).
   */
  longRunning?: boolean;
}

export function createClickHouse(options: ClickHouseOptions): ClickHouse {
  const client = createClient({
    url: options.url,
    username: options.username ?? 'default',
    password: options.password ?? '',
    database: options.database ?? 'default',
    request_timeout: options.requestTimeoutMs ?? 30_000,
    compression: { request: false, response: false },
    keep_alive: { enabled: true },
    ...(options.longRunning ? { clickhouse_settings: { send_progress_in_http_headers: 1, http_headers_progress_interval_ms: '10000' } } : {}),
  });

  return {
    name: 'clickhouse',
    database: options.database ?? 'default',
    async insert(table, rows) {
      if (rows.length === 0) return;
      try {
        await client.insert({ table, values: rows as Record<string, unknown>[], format: 'JSONEachRow' });
      } catch (err) {
        throw toClickHouseAppError(err, `insert into ${table}`);
      }
    },
    async insertTabSeparated(table, columns, lines) {
      if (lines.length === 0) return;
      try {
        await client.insert({
          table,
          columns: [...columns] as [string, ...string[]],
          values: Readable.from([Buffer.from(`${lines.join('\n')}\n`)], { objectMode: false }),
          format: 'TabSeparated',
        });
      } catch (err) {
        throw toClickHouseAppError(err, `insert into ${table}`);
      }
    },
    async query<T>(query: string) {
      try {
        const result = await client.query({ query, format: 'JSONEachRow', clickhouse_settings: { wait_end_of_query: 1 } });
        return await result.json<T>();
      } catch (err) {
        throw toClickHouseAppError(err, 'query');
      }
    },
    async command(query) {
      try {
        await client.command({ query, clickhouse_settings: { wait_end_of_query: 1 } });
      } catch (err) {
        throw toClickHouseAppError(err, 'command');
      }
    },
    async ping() {
      const result = await client.ping();
      return result.success;
    },
    close: () => client.close(),
  };
}

/** The client for a service configured with the CLICKHOUSE_* variables (see config.ts). */
export function createClickHouseFromConfig(config: {
  CLICKHOUSE_URL: string;
  CLICKHOUSE_USER: string;
  CLICKHOUSE_PASSWORD: string;
  CLICKHOUSE_DATABASE: string;
}): ClickHouse {
  return createClickHouse({
    url: config.CLICKHOUSE_URL,
    username: config.CLICKHOUSE_USER,
    password: config.CLICKHOUSE_PASSWORD,
    database: config.CLICKHOUSE_DATABASE,
  });
}

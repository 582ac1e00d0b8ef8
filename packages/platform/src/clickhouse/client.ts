import { Readable } from 'node:stream';
import { ClickHouseLogLevel, createClient } from '@clickhouse/client';
import type { Closeable } from '../lifecycle.js';
import { AppError, isRetryable } from '../errors.js';
import { toClickHouseAppError } from './errors.js';
import { tabSeparatedBody } from './tab-separated-body.js';

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
  /**
   * One server, or the replicas of a cluster comma-separated (`http://a:8123,http://b:8123`):
   * requests go to one of them until it fails with a retryable error (down, no ZooKeeper, read
   * only), then to the next. A read is tried once more on the next at once; an insert or a
   * command is not: its caller retries (the writer with the same bytes, which the replicated
   * table's block deduplication recognises on any replica; docs/scale.md).
   */
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
  /**
   * No console lines from the client library on failures: for callers that report their
   * failures themselves, once per change (the replica watch asks a down server every 10 s).
   */
  quiet?: boolean;
}

/** The servers of a CLICKHOUSE_URL (one, or several comma-separated). */
export function clickHouseUrls(url: string): string[] {
  const urls = url
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  if (urls.length === 0) throw new AppError('invalid_config', 'CLICKHOUSE_URL names no server');
  return urls;
}

export function createClickHouse(options: ClickHouseOptions): ClickHouse {
  const servers = clickHouseUrls(options.url).map((url) => createOneServer({ ...options, url }));
  const [only] = servers;
  if (servers.length === 1 && only) return only;
  let active = 0;
  // The server a request went to: a failure moves on from it, not from a server a concurrent
  // request already moved to.
  async function onActive<T>(run: (server: ClickHouse) => Promise<T>, retryOnNext: boolean): Promise<T> {
    const index = active;
    try {
      return await run(servers[index] as ClickHouse);
    } catch (err) {
      if (!isRetryable(err)) throw err;
      if (active === index) active = (index + 1) % servers.length;
      if (!retryOnNext) throw err;
      return run(servers[active] as ClickHouse);
    }
  }
  return {
    name: 'clickhouse',
    database: options.database ?? 'default',
    insert: (table, rows) => onActive((s) => s.insert(table, rows), false),
    insertTabSeparated: (table, columns, lines) => onActive((s) => s.insertTabSeparated(table, columns, lines), false),
    query: <T>(query: string) => onActive((s) => s.query<T>(query), true),
    command: (query) => onActive((s) => s.command(query), false),
    ping: () =>
      onActive(async (s) => ((await s.ping()) ? true : Promise.reject(new AppError('clickhouse_unavailable', 'ping failed', { retryable: true }))), true).catch(
        () => false,
      ),
    close: async () => {
      await Promise.all(servers.map((s) => s.close()));
    },
  };
}

function createOneServer(options: ClickHouseOptions): ClickHouse {
  const client = createClient({
    url: options.url,
    username: options.username ?? 'default',
    password: options.password ?? '',
    database: options.database ?? 'default',
    request_timeout: options.requestTimeoutMs ?? 30_000,
    compression: { request: false, response: false },
    keep_alive: { enabled: true },
    ...(options.quiet ? { log: { level: ClickHouseLogLevel.OFF } } : {}),
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
          values: Readable.from([tabSeparatedBody(lines)], { objectMode: false }),
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

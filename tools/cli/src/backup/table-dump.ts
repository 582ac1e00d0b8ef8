/**
 * The ClickHouse half of `ingest backup` / `ingest restore`, and the owner of its dump format:
 * `clickhouse/<table>/<partition id>.tsv.gz`, the partition's rows as TabSeparated with the
 * columns the manifest lists, in that order.
 *
 * TabSeparated through the HTTP interface because it is the one format that (a) exists on 18.16
 * and on current servers, (b) round-trips every column type exactly, aggregate function states
 * included (their bytes are escaped, never decoded), and (c) is parsed into the target's column
 * types on insert, so a dump still loads after a migration changed a column's type (Native
 * would insist on the old type). Nothing here assumes a column's type: the columns come from
 * `system.columns` at backup time. One request per partition keeps the memory flat whatever the
 * table's size and lets the log show progress; `wait_end_of_query` makes the server finish the
 * query before answering, so an error cannot hide inside a 200 body.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createGunzip, createGzip } from 'node:zlib';
import {
  AppError,
  type ClickHouse,
  type ColumnSpec,
  type DataTable,
  insertableColumns,
  insertStatement,
  type Logger,
  selectOfPartition,
  tablePartitions,
} from '@ingest/platform';
import { fileDigest } from './topic-dump.js';

export interface ClickHouseHttp {
  url: string;
  user: string;
  password: string;
  database: string;
}

export interface PartitionDump {
  /** As `system.parts` shows it (a SQL literal, e.g. `202611`), or `tuple()` for an unpartitioned table. */
  partition: string;
  file: string;
  rows: number;
  sha256: string;
  bytes: number;
}

export interface TableDump {
  name: string;
  engine: string;
  columns: ColumnSpec[];
  partitions: PartitionDump[];
  rows: number;
}

function authHeaders(http: ClickHouseHttp): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${http.user}:${http.password}`).toString('base64')}` };
}

function endpoint(http: ClickHouseHttp, query: string | undefined, settings: Record<string, string>): string {
  const url = new URL(http.url);
  url.searchParams.set('database', http.database);
  if (query !== undefined) url.searchParams.set('query', query);
  for (const [k, v] of Object.entries(settings)) url.searchParams.set(k, v);
  return url.toString();
}

async function failure(response: Response, what: string): Promise<AppError> {
  // The server's message names the query's problem; bounded, it never holds row data.
  const text = (await response.text().catch(() => '')).slice(0, 500);
  return new AppError('clickhouse_error', `${what}: ClickHouse answered ${response.status}: ${text}`);
}

/** Counts rows as the TabSeparated bytes go by: a row ends with the one unescaped newline. */
function rowCounter(): { tap: Transform; rows(): number } {
  let rows = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) rows++;
      done(null, chunk);
    },
  });
  return { tap, rows: () => rows };
}

export interface DumpTableOptions {
  ch: ClickHouse;
  http: ClickHouseHttp;
  table: DataTable;
  dir: string;
  /** The manifest's path of the table's directory (relative to the backup). */
  relDir: string;
  logger: Logger;
}

/** Dumps the table one partition at a time (the active parts now); files are created with mode 0600. */
export async function dumpTable(options: DumpTableOptions): Promise<TableDump> {
  const { ch, http, table } = options;
  const columns = await insertableColumns(ch, http.database, table.name);
  const parts = await tablePartitions(ch, http.database, table.name);
  const partitions: PartitionDump[] = [];
  for (const [index, part] of parts.entries()) {
    const file = `${options.relDir}/${part.partition_id.replace(/[^A-Za-z0-9_-]/g, '_')}.tsv.gz`;
    const response = await fetch(endpoint(http, undefined, { wait_end_of_query: '1' }), {
      method: 'POST',
      headers: authHeaders(http),
      body: `${selectOfPartition(http.database, table, columns, part.partition)} FORMAT TabSeparated`,
    });
    if (!response.ok || !response.body) throw await failure(response, `dump of ${table.name} partition ${part.partition}`);
    const counter = rowCounter();
    const digest = fileDigest();
    await pipeline(
      Readable.fromWeb(response.body as WebReadableStream<Uint8Array>),
      counter.tap,
      createGzip(),
      digest.tap,
      createWriteStream(`${options.dir}/${file}`, { mode: 0o600, flags: 'wx' }),
    );
    partitions.push({ partition: part.partition, file, rows: counter.rows(), ...digest.result() });
    options.logger.info(
      { table: table.name, partition: part.partition, rows: counter.rows(), done: `${index + 1}/${parts.length}` },
      'backup: table partition dumped',
    );
  }
  return { name: table.name, engine: table.engine, columns, partitions, rows: partitions.reduce((n, p) => n + p.rows, 0) };
}

/** Inserts one dumped partition, streamed from the file (the memory stays flat). */
export async function insertPartition(
  http: ClickHouseHttp,
  table: string,
  columns: readonly ColumnSpec[],
  path: string,
  settings: Record<string, string>,
): Promise<void> {
  const response = await fetch(endpoint(http, insertStatement(http.database, table, columns), settings), {
    method: 'POST',
    headers: authHeaders(http),
    // undici streams an async iterable body (chunked); `duplex` is its required flag for that.
    body: createReadStream(path).pipe(createGunzip()) as unknown as ReadableStream,
    duplex: 'half',
  } as RequestInit);
  if (!response.ok) throw await failure(response, `insert into ${table}`);
  await response.arrayBuffer();
}

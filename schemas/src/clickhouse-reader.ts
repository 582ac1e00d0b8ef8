import { type Static, Type } from '@sinclair/typebox';

/**
 * The admin API's per-account ClickHouse reader (docs/clickhouse-readers.md): what it is, and on
 * creation or rotation its password, shown once (the server keeps its SHA-256 only).
 */
export const ClickHouseReaderView = Type.Object(
  {
    accountId: Type.String(),
    /** The ClickHouse user name: `reader_<accountId>`. */
    user: Type.String(),
    /** The database its tables are in (its default database). */
    database: Type.String(),
    tables: Type.Array(Type.String()),
    /** Its settings profile (readonly = 1, per-query and concurrency limits). */
    settings: Type.Record(Type.String(), Type.Number()),
    /** Its quota per interval (seconds), all its queries together. */
    quota: Type.Record(Type.String(), Type.Number()),
    exists: Type.Boolean(),
  },
  { additionalProperties: true },
);
export type ClickHouseReaderView = Static<typeof ClickHouseReaderView>;

export const ClickHouseReaderWithPassword = Type.Intersect([
  ClickHouseReaderView,
  Type.Object({ password: Type.String({ description: 'Shown once; the server keeps its SHA-256 only' }) }),
]);
export type ClickHouseReaderWithPassword = Static<typeof ClickHouseReaderWithPassword>;

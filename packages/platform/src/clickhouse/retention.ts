import type { Logger } from '../logger.js';
import type { ClickHouse } from './client.js';
import { ident, sql } from './sql.js';

/**
 * Retention (docs/clickhouse-retention.md): how long events and the rollups are kept, one setting
 * per table kind, applied by `ingest setup`. Not per plan: a TTL is a property of the table,
 * evaluated by the server for every row, and a plan is the control plane's and changes at any
 * time; a per-plan TTL would need the plans inside ClickHouse (a dictionary read per row) and
 * would drop an account's history the moment it moved to a smaller plan.
 *
 * Current servers (TTL since 19.6): `ALTER TABLE … MODIFY TTL`, only when the table's TTL differs
 * (each MODIFY TTL re-reads every part of the table). ClickHouse 18.16 has no TTL: setup drops
 * the monthly partitions whose every day is past the retention instead (run `ingest setup`
 * daily there). The billing ledger and the audit log are records and have no TTL.
 */
export interface RetentionSettings {
  /** Days of `events` kept (by event_time); 0: forever. */
  eventsDays: number;
  /** Days of `usage_hourly` and `events_daily` kept; 0: forever. At least ROLLUPS_MIN_DAYS otherwise. */
  rollupsDays: number;
}

/**
 * The rollups are read back this far: the dashboard's usage history (90 days), and the allowance
 * reconciler and the ledger closer (the current and the previous month, from usage_hourly).
 */
export const ROLLUPS_MIN_DAYS = 100;

/** Each table kept for a time: its time column (a partition key of toYYYYMM of it) and its setting. */
export const RETENTION_TABLES = [
  { table: 'events', column: 'event_time', setting: 'eventsDays' },
  { table: 'usage_hourly', column: 'hour', setting: 'rollupsDays' },
  { table: 'events_daily', column: 'day', setting: 'rollupsDays' },
] as const satisfies readonly { table: string; column: string; setting: keyof RetentionSettings }[];

/** TTL (MergeTree row TTL) exists from ClickHouse 19.6 on. */
export function serverHasTtl(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 19 || (major === 19 && minor >= 6);
}

/** The TTL expression of a table's rows: its time column as DateTime (DateTime64 and Date too) plus the days. */
export function ttlExpression(column: string, days: number): string {
  return `toDateTime(${ident(column).text}) + INTERVAL ${days} DAY`;
}

/** The days of a table's TTL as the server prints it in engine_full (`TTL toDateTime(x) + toIntervalDay(90)`); undefined: none or not ours. */
export function ttlDaysOf(engineFull: string): number | undefined {
  const match = /\bTTL\s+toDateTime\([^)]*\)\s*\+\s*toIntervalDay\((\d+)\)/.exec(engineFull);
  return match ? Number(match[1]) : undefined;
}

/** Partition ids (YYYYMM) every day of which is before the cutoff, so dropping them removes only expired rows. */
export function expiredMonths(partitions: readonly string[], days: number, nowMs: number): string[] {
  const cutoff = nowMs - days * 86_400_000;
  return partitions.filter((p) => {
    if (!/^\d{6}$/.test(p)) return false;
    const firstOfNextMonth = Date.UTC(Number(p.slice(0, 4)), Number(p.slice(4, 6)), 1);
    return firstOfNextMonth <= cutoff;
  });
}

export interface RetentionResult {
  /** Current servers: the tables whose TTL was set or removed. */
  ttlChanged: string[];
  /** 18.16: `table:partition` dropped. */
  partitionsDropped: string[];
}

/** Applies the retention to the tables of `ch`'s database (setup's client, a user that may ALTER and DROP PARTITION). */
export async function applyRetention(
  ch: ClickHouse,
  input: { settings: RetentionSettings; serverVersion: string; logger: Logger; now?: () => number },
): Promise<RetentionResult> {
  const result: RetentionResult = { ttlChanged: [], partitionsDropped: [] };
  const ttl = serverHasTtl(input.serverVersion);
  for (const { table, column, setting } of RETENTION_TABLES) {
    const days = input.settings[setting];
    if (ttl) {
      const [row] = await ch.query<{ engine_full: string }>(sql`SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = ${table}`);
      const engineFull = row?.engine_full ?? '';
      const current = ttlDaysOf(engineFull);
      if (days > 0 && current !== days) {
        await ch.command(`ALTER TABLE ${ident(table).text} MODIFY TTL ${ttlExpression(column, days)}`);
        result.ttlChanged.push(table);
      } else if (days === 0 && current !== undefined) {
        // Only a TTL of ours (a table TTL in our form): one a migration or an operator set stays.
        await ch.command(`ALTER TABLE ${ident(table).text} REMOVE TTL`);
        result.ttlChanged.push(table);
      }
    } else if (days > 0) {
      const parts = await ch.query<{ partition: string }>(
        sql`SELECT DISTINCT partition FROM system.parts WHERE database = currentDatabase() AND table = ${table} AND active`,
      );
      for (const month of expiredMonths(
        parts.map((p) => p.partition),
        days,
        (input.now ?? Date.now)(),
      )) {
        // The partition id is six digits (checked above): the partition expression of toYYYYMM.
        await ch.command(`ALTER TABLE ${ident(table).text} DROP PARTITION ${month}`);
        result.partitionsDropped.push(`${table}:${month}`);
      }
    }
  }
  input.logger.info(
    { ...input.settings, clickhouse: input.serverVersion, ...result },
    ttl ? 'retention: TTLs applied' : 'retention: expired partitions dropped (no TTL on this server)',
  );
  return result;
}

import { type ClickHouse, sql } from '@ingest/platform';

export const HISTORY_DAYS = 90;

/**
 * Unique events per UTC day of receipt from the `usage_hourly` rollup (the numbers the
 * allowance charges), merged per day so each day is exact. Days without events are filled with 0.
 * No SETTINGS clause: read as the read-only user, whose settings bound it (see event.store.ts in @ingest/http).
 */
export async function readAllowanceHistory(ch: ClickHouse, accountId: string, nowMs: number): Promise<{ day: string; events: number }[]> {
  const days = lastDays(nowMs, HISTORY_DAYS);
  const first = days[0] ?? '';
  const rows = await ch.query<{ day: string; events: string | number }>(
    sql`SELECT toString(toDate(hour)) AS day, uniqExactMerge(events) AS events
      FROM usage_hourly
      WHERE account_id = ${accountId} AND hour >= toDateTime(${`${first} 00:00:00`}, 'UTC')
      GROUP BY day
      ORDER BY day`,
  );
  const byDay = new Map(rows.map((r) => [r.day, Number(r.events)]));
  return days.map((day) => ({ day, events: byDay.get(day) ?? 0 }));
}

/** `count` UTC dates ending today, oldest first, as YYYY-MM-DD. */
export function lastDays(nowMs: number, count: number): string[] {
  const today = Date.UTC(new Date(nowMs).getUTCFullYear(), new Date(nowMs).getUTCMonth(), new Date(nowMs).getUTCDate());
  return Array.from({ length: count }, (_, i) => new Date(today - (count - 1 - i) * 86_400_000).toISOString().slice(0, 10));
}

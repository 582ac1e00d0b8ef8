import { type ClickHouse, sql } from '@ingest/platform';

/** ClickHouse's exact counts of unique events per account, as the allowance reconciler and the ledger read them. */
export interface ExactCounts {
  /** Unique events per account received in [fromMs, toMs) (whole hours). */
  exactByAccount(fromMs: number, toMs: number): Promise<Map<string, number>>;
}

/**
 * From `usage_hourly`: uniqExact states per account and hour of receipt, merged over the hours
 * asked for. A redelivered copy inserted before the ReplacingMergeTree merged it away is still
 * counted once (the states count distinct event ids).
 */
export function createExactCountsStore(ch: ClickHouse): ExactCounts {
  return {
    async exactByAccount(fromMs, toMs) {
      const rows = await ch.query<{ account_id: string; n: string }>(
        sql`SELECT account_id, uniqExactMerge(events) AS n FROM usage_hourly WHERE hour >= ${new Date(fromMs)} AND hour < ${new Date(toMs)} GROUP BY account_id`,
      );
      return new Map(rows.map((r) => [r.account_id, Number(r.n)]));
    },
  };
}

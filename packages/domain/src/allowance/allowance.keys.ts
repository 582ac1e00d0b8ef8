/**
 * The allowance's Redis keys: one owner for their layout. Every key of an account carries the
 * account as a Redis Cluster hash tag ({accountId}), so one script touches one slot.
 *
 *   quota:{acc}:YYYYMM           used this period (the counter the gateway checks)
 *   quota:{acc}:YYYYMM:hours     hash: hour number -> counted in that hour; job:<id> -> reserved
 *                                for a bulk/CSV job not yet settled
 *   quota:{acc}:YYYYMM:refused   events refused for the allowance this period (for the ledger)
 *   quota:{acc}:seen             hash: seen-id bucket -> shards it was written with (for the sweep)
 *   quota:{acc}:seen:B:S         the ids counted in bucket B, shard S (an intset of fingerprints)
 *
 * The keys keep their `quota:` prefix: existing counters, dashboards and runbooks name them,
 * and a renamed key would reset every account's count at deploy. In code the concept is the
 * allowance (docs/architecture.md, glossary).
 */
export interface PeriodKeys {
  counter: string;
  hours: string;
  refused: string;
}

export function allowanceKeys(accountId: string, periodId: string, prefix = ''): PeriodKeys {
  const base = `${prefix}quota:{${accountId}}:${periodId}`;
  return { counter: base, hours: `${base}:hours`, refused: `${base}:refused` };
}

/** The registry of an account's seen-id buckets, and the common prefix of their shard keys. */
export function seenKeys(accountId: string, prefix = ''): { registry: string; shardPrefix: string } {
  return { registry: `${prefix}quota:{${accountId}}:seen`, shardPrefix: `${prefix}quota:{${accountId}}:seen:` };
}

/** The hours hash field of a job's pending reservation. */
export function jobField(jobId: string): string {
  return `job:${jobId}`;
}

export function hourOf(ms: number): number {
  return Math.floor(ms / 3_600_000);
}

/** Counter keys look like `quota:{acc}:YYYYMM`; anything else (hours, refused, seen) is not one. */
export function accountOfCounterKey(key: string, prefix: string, periodId: string): string | undefined {
  const match = /^quota:\{(.+)\}:(\d{6})$/.exec(key.slice(prefix.length));
  return match?.[2] === periodId ? match[1] : undefined;
}

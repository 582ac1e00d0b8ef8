/** The allowance period: the calendar month in UTC, reset at 00:00 UTC on the 1st. */
export interface AllowancePeriod {
  /** `YYYYMM`, part of the Redis keys. */
  id: string;
  start: Date;
  /** Start of the next month: when the allowance resets. */
  end: Date;
}

export function allowancePeriod(nowMs: number): AllowancePeriod {
  const now = new Date(nowMs);
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { id: `${start.getUTCFullYear()}${String(start.getUTCMonth() + 1).padStart(2, '0')}`, start, end };
}

/**
 * Real server: ClickHouse (a fresh migrated database). The dashboard's daily chart counts
 * unique events per UTC day of receipt from the usage_hourly rollup: redelivered copies count
 * once, other accounts and days outside the 90 are left out, empty days are 0. Rows are written
 * as the tests' user and read as the gateway's read-only user, as in production.
 */
import { createReaderClickHouse, useFixture, useTestClickHouse } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { readAllowanceHistory, lastDays } from './allowance-history.store.js';

const clickhouse = useTestClickHouse();
const reader = useFixture(
  async () => createReaderClickHouse(clickhouse.database),
  (ch) => ch.close(),
);

function row(accountId: string, eventId: string, receivedAtMs: number): Record<string, unknown> {
  return {
    account_id: accountId,
    event_id: eventId,
    event_name: 'Signed Up',
    email: 'ada@example.com',
    domain: '',
    event_time: Math.floor(receivedAtMs / 1000),
    event_time_ms: receivedAtMs,
    received_at: Math.floor(receivedAtMs / 1000),
    received_at_ms: receivedAtMs,
    properties: '{}',
    source: 'api',
    job_id: '',
    inserted_at: Math.floor(Date.now() / 1000),
  };
}

describe('the allowance history', () => {
  it('counts unique events per UTC day for one account over the last 90 days', async () => {
    const now = Date.UTC(2026, 10, 20, 15, 0, 0);
    const day = (daysAgo: number, hour: number) => now - daysAgo * 86_400_000 - (15 - hour) * 3_600_000;
    // Two inserts of e1: a redelivery; e2 on the same day; e3 yesterday late; e4 100 days ago; another account's event.
    await clickhouse.ch.insert('events', [row('acc_a', 'e1', day(0, 1)), row('acc_a', 'e2', day(0, 14)), row('acc_a', 'e3', day(1, 23))]);
    await clickhouse.ch.insert('events', [row('acc_a', 'e1', day(0, 1)), row('acc_a', 'e4', day(100, 12)), row('acc_b', 'x1', day(0, 3))]);

    const daily = await readAllowanceHistory(reader, 'acc_a', now);
    expect(daily).toHaveLength(90);
    expect(daily.at(-1)).toEqual({ day: '2026-11-20', events: 2 });
    expect(daily.at(-2)).toEqual({ day: '2026-11-19', events: 1 });
    expect(daily[0]?.day).toBe('2026-08-23');
    expect(daily.reduce((sum, d) => sum + d.events, 0)).toBe(3);
  });

  it('escapes the account id (a hostile id reads nothing, and breaks nothing)', async () => {
    const daily = await readAllowanceHistory(reader, "acc_a' OR 1=1 --\\", Date.UTC(2026, 10, 20));
    expect(daily.every((d) => d.events === 0)).toBe(true);
  });

  it('lists the days oldest first, ending today (UTC)', () => {
    expect(lastDays(Date.UTC(2026, 0, 2, 23, 59), 3)).toEqual(['2025-12-31', '2026-01-01', '2026-01-02']);
  });
});

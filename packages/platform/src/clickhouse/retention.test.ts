import { describe, expect, it } from 'vitest';
import { expiredMonths, serverHasTtl, ttlDaysOf, ttlExpression } from './retention.js';

describe('retention', () => {
  it('TTL from 19.6 on', () => {
    expect(['18.16.1', '19.5.3'].map(serverHasTtl)).toEqual([false, false]);
    expect(['19.6.2', '24.8.1.1', '26.9.1'].map(serverHasTtl)).toEqual([true, true, true]);
  });

  it('reads back the days of the TTL the server prints, and nothing from a TTL not ours', () => {
    expect(ttlExpression('event_time', 90)).toBe('toDateTime(`event_time`) + INTERVAL 90 DAY');
    expect(
      ttlDaysOf(
        'ReplacingMergeTree(inserted_at) PARTITION BY toYYYYMM(event_time) ORDER BY x TTL toDateTime(event_time) + toIntervalDay(90) SETTINGS index_granularity = 8192',
      ),
    ).toBe(90);
    expect(ttlDaysOf('MergeTree ORDER BY x SETTINGS index_granularity = 8192')).toBeUndefined();
    expect(ttlDaysOf('MergeTree ORDER BY x TTL event_time + toIntervalMonth(3)')).toBeUndefined();
  });

  it('drops a month only when its every day is past the retention', () => {
    const now = Date.UTC(2026, 10, 15); // 2026-11-15
    // 30 days: cutoff 2026-10-16; October has days after it, September does not.
    expect(expiredMonths(['202608', '202609', '202610', '202611', 'tuple()', '2026-09'], 30, now)).toEqual(['202608', '202609']);
    // 45 days: cutoff 2026-10-01 00:00: September ends exactly then.
    expect(expiredMonths(['202609', '202610'], 45, now)).toEqual(['202609']);
    expect(expiredMonths(['202509', '202512'], 400, now)).toEqual(['202509']);
  });
});

import { describe, expect, it } from 'vitest';
import {
  boundedReason,
  daysCovering,
  decodeSyncHealth,
  hourBucket,
  hourlySeries,
  isCredentialFailure,
  SYNC_HEALTH_REASON_MAX,
  totalsOf,
} from './sync-health.js';

const T = Date.UTC(2026, 10, 27, 1, 30, 0);

describe('sync health record', () => {
  it('decodes the hash the store writes, keeping only what it knows (a newer writer may add fields)', () => {
    expect(
      decodeSyncHealth({
        v: '2',
        state: 'parked',
        reason: 'the CRM does not answer',
        since: '100',
        unhealthySince: '50',
        updatedAt: '200',
        lastSuccessAt: '40',
        futureField: 'x',
      }),
    ).toEqual({ v: 2, state: 'parked', reason: 'the CRM does not answer', sinceMs: 100, unhealthySinceMs: 50, updatedAtMs: 200, lastSuccessAtMs: 40 });
  });

  it('reads nothing from an empty hash or a state it does not know', () => {
    expect(decodeSyncHealth({})).toBeUndefined();
    expect(decodeSyncHealth({ state: 'exploded', since: '1' })).toBeUndefined();
  });

  it('keeps a reason to one bounded line', () => {
    expect(boundedReason(' a\n  b ')).toBe('a b');
    const long = boundedReason('x'.repeat(1000));
    expect(long).toHaveLength(SYNC_HEALTH_REASON_MAX);
    expect(long.endsWith('…')).toBe(true);
  });

  it('takes auth refusals and unusable credentials as a broken credential, other failures not', () => {
    expect(['crm_auth', 'crm_credential_missing', 'crm_credential_unreadable'].map(isCredentialFailure)).toEqual([true, true, true]);
    expect(['crm_permanent', 'crm_record_rejected', 'crm_retries_exhausted'].map(isCredentialFailure)).toEqual([false, false, false]);
  });
});

describe('hourly series', () => {
  it('names the UTC day hash and hour field of a time', () => {
    expect(hourBucket(T)).toEqual({ day: '20261127', hour: '01' });
  });

  it('covers the hours ending now with the day hashes they live in', () => {
    expect(daysCovering(T, 2)).toEqual(['20261127']);
    expect(daysCovering(T, 3)).toEqual(['20261126', '20261127']);
    expect(daysCovering(T, 7 * 24)).toHaveLength(8);
  });

  it('fills every hour, oldest first, with 0 where nothing was counted', () => {
    const byDay = new Map<string, Record<string, string>>([
      ['20261126', { '23:failed': '2', '22:synced': '9' }],
      ['20261127', { '01:synced': '5', '01:skipped': '1', '00:bogus': 'x' }],
    ]);
    const series = hourlySeries(T, 3, byDay);
    expect(series).toEqual([
      { hour: '2026-11-26T23:00:00.000Z', synced: 0, skipped: 0, failed: 2 },
      { hour: '2026-11-27T00:00:00.000Z', synced: 0, skipped: 0, failed: 0 },
      { hour: '2026-11-27T01:00:00.000Z', synced: 5, skipped: 1, failed: 0 },
    ]);
    expect(totalsOf(series, 2)).toEqual({ synced: 5, skipped: 1, failed: 0 });
    expect(totalsOf(series, 24)).toEqual({ synced: 5, skipped: 1, failed: 2 });
  });
});

import { describe, expect, it } from 'vitest';
import { clickHouseFailureCause, clickhouseErrorCode, isRetryableClickHouseError, toClickHouseAppError } from './errors.js';

describe('clickhouse errors', () => {
  it('reads the code from 18.16-style error text', () => {
    expect(clickhouseErrorCode(new Error("Code: 60, e.displayText() = DB::Exception: Table x doesn't exist"))).toBe(60);
    expect(clickhouseErrorCode(Object.assign(new Error('x'), { code: '241' }))).toBe(241);
    expect(clickhouseErrorCode(new Error('no code here'))).toBeUndefined();
    expect(clickhouseErrorCode('not an error')).toBeUndefined();
  });

  it('classifies network failures and overload as retryable, bad SQL as not', () => {
    expect(isRetryableClickHouseError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8123'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isRetryableClickHouseError(new Error('Code: 252, Too many parts'))).toBe(true);
    expect(isRetryableClickHouseError(new Error('Code: 62, Syntax error'))).toBe(false);
    // A replica without ZooKeeper, or without disk space: passes when ZooKeeper or the disk is back.
    expect(isRetryableClickHouseError(new Error('Code: 242, e.displayText() = DB::Exception: Table is in readonly mode'))).toBe(true);
    expect(isRetryableClickHouseError(new Error('Code: 225, e.displayText() = DB::Exception: ZooKeeper session has been expired'))).toBe(true);
    expect(isRetryableClickHouseError(new Error('Code: 999, e.displayText() = Coordination::Exception: Connection loss'))).toBe(true);
    expect(isRetryableClickHouseError(new Error('Code: 243, e.displayText() = DB::Exception: Cannot reserve 1.00 MiB, not enough space'))).toBe(true);
    // What a full 18.16 replica answers an insert (the part's files cannot be written): retried, not refused.
    const enospc =
      'Code: 75, e.displayText() = DB::ErrnoException: Cannot write to file /ch/data/data/db/events/tmp_insert_all_2_2_0/primary.idx, errno: 28, strerror: No space left on device, e.what() = DB::ErrnoException';
    expect(isRetryableClickHouseError(new Error(enospc))).toBe(true);
    expect(toClickHouseAppError(new Error(enospc), 'insert into events')).toMatchObject({ code: 'clickhouse_unavailable', retryable: true });
    // The same write failing for another reason (EIO) is not a full disk.
    expect(
      isRetryableClickHouseError(new Error('Code: 75, e.displayText() = DB::ErrnoException: Cannot write to file x, errno: 5, strerror: Input/output error')),
    ).toBe(false);
    const appError = toClickHouseAppError(new Error('Code: 62, Syntax error\nstack'), 'query');
    expect(appError.code).toBe('clickhouse_error');
    expect(appError.retryable).toBe(false);
    expect(appError.message).toBe('clickhouse query failed (code 62): Code: 62, Syntax error');
  });
});

describe('clickHouseFailureCause', () => {
  it('names ZooKeeper, a full disk, an unreachable server, overload, or other', () => {
    const wrapped = (e: Error) => toClickHouseAppError(e, 'insert into events');
    expect(clickHouseFailureCause(wrapped(new Error('Code: 242, e.displayText() = DB::Exception: Table is in readonly mode')))).toBe('zookeeper');
    expect(clickHouseFailureCause(wrapped(new Error('Code: 999, e.displayText() = Coordination::Exception: Connection loss')))).toBe('zookeeper');
    expect(clickHouseFailureCause(wrapped(new Error('Code: 243, e.displayText() = DB::Exception: Cannot reserve 1.00 MiB, not enough space')))).toBe(
      'disk_full',
    );
    expect(
      clickHouseFailureCause(
        wrapped(new Error('Code: 74, e.displayText() = DB::ErrnoException: Cannot write to file, errno: 28, strerror: No space left on device')),
      ),
    ).toBe('disk_full');
    expect(
      clickHouseFailureCause(
        wrapped(new Error('Code: 75, e.displayText() = DB::ErrnoException: Cannot write to file x, errno: 28, strerror: No space left on device')),
      ),
    ).toBe('disk_full');
    expect(clickHouseFailureCause(wrapped(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8223'), { code: 'ECONNREFUSED' })))).toBe('unreachable');
    expect(clickHouseFailureCause(wrapped(new Error('Code: 252, Too many parts')))).toBe('overloaded');
    expect(clickHouseFailureCause(wrapped(new Error('Code: 62, Syntax error')))).toBe('other');
  });
});

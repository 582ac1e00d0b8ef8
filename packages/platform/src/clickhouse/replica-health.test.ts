/**
 * The rule of /readyz's `clickhouse-replica` lines (docs/scale.md, "A replica whose disk is
 * full"): a replica's own system tables classified with the insert failures' cause names.
 */
import { describe, expect, it } from 'vitest';
import { causeOfException, describeReplica, excerpt, FAILED_TRIES_COUNTED, judgeReplica, judgeUnanswered, replicaName } from './replica-health.js';

// What a full 18.16 replica's replication queue says (its fetches write the part to disk; the
// path is as long as the scale test's).
const NO_SPACE =
  'Code: 75, e.displayText() = DB::ErrnoException: Cannot write to file /work/main/.local/clickhouse-cluster/replica-1/data/data/test_mwzz07ijb2e36e/usage_hourly/tmp_fetch_202611_12_12_0/account_id.bin, errno: 28, strerror: No space left on device, e.what() = DB::ErrnoException';
const ZK_LOST =
  'Code: 999, e.displayText() = Coordination::Exception: Connection loss, path: /clickhouse/tables/1/events/log, e.what() = Coordination::Exception';
const NOT_FOUND = 'Code: 234, e.displayText() = DB::Exception: No active replica has part 20261128_5_5_0 or covering part, e.what() = DB::Exception';

const healthyTable = { table: 'events', is_readonly: 0, is_session_expired: 0, queue_size: '0', absolute_delay: '0' };

describe('causeOfException', () => {
  it('names a full disk, a lost ZooKeeper, and anything else other', () => {
    expect(causeOfException(NO_SPACE)).toBe('disk_full');
    expect(causeOfException('Code: 243, e.displayText() = DB::Exception: Cannot reserve 1.00 MiB, not enough space')).toBe('disk_full');
    expect(causeOfException(ZK_LOST)).toBe('zookeeper');
    expect(causeOfException(NOT_FOUND)).toBe('other');
  });

  it('names a fetch that cannot reach the replica holding the part peer_unreachable (the trouble is on that replica)', () => {
    // 18.16's text when replica 1 is down and replica 2 fetches a part only replica 1 has.
    expect(causeOfException('Poco::Exception. Code: 1000, e.code() = 111, Connection refused')).toBe('peer_unreachable');
    expect(causeOfException('Code: 209, e.displayText() = DB::NetException: Timeout: connect timed out: 10.0.0.7:9009')).toBe('peer_unreachable');
    const verdict = judgeReplica(
      '127.0.0.1:8224',
      [],
      [{ table: 'events_daily', num_tries: FAILED_TRIES_COUNTED, last_exception: 'Poco::Exception. Code: 1000, e.code() = 111, Connection refused' }],
    );
    expect(describeReplica(verdict)).toMatch(
      /^clickhouse-replica 127\.0\.0\.1:8224: replication failing \(cause: peer_unreachable; 1 queue entries failing in events_daily/,
    );
  });
});

describe('judgeReplica', () => {
  it('is healthy with an empty queue, and with an entry that failed fewer than the counted tries', () => {
    expect(judgeReplica('127.0.0.1:8224', [healthyTable], [])).toEqual({ replica: '127.0.0.1:8224', detail: 'queue 0, 0 s behind' });
    expect(judgeReplica('r', [healthyTable], [{ table: 'events', num_tries: FAILED_TRIES_COUNTED - 1, last_exception: NOT_FOUND }]).cause).toBeUndefined();
  });

  it('names a full disk with the failing tables, an excerpt of the error and the backlog', () => {
    const v = judgeReplica(
      '127.0.0.1:8223',
      [{ ...healthyTable, queue_size: '12', absolute_delay: '40' }],
      [
        { table: 'events', num_tries: '7', last_exception: NO_SPACE },
        { table: 'events', num_tries: '5', last_exception: NOT_FOUND },
      ],
    );
    expect(v.cause).toBe('disk_full');
    expect(describeReplica(v)).toMatch(
      /^clickhouse-replica 127\.0\.0\.1:8223: replication failing \(cause: disk_full; 2 queue entries failing in events, e\.g\. "Code: 75, DB::ErrnoException: Cannot write to file .*….*errno: 28, strerror: No space left on device"; queue 12, 40 s behind\)$/,
    );
  });

  it('says zookeeper for a read-only table or an expired session, and a full disk wins over it', () => {
    expect(judgeReplica('r', [{ ...healthyTable, is_readonly: 1 }], []).cause).toBe('zookeeper');
    expect(judgeReplica('r', [{ ...healthyTable, is_session_expired: '1' }], []).detail).toContain('1 tables read-only or without a ZooKeeper session');
    expect(judgeReplica('r', [{ ...healthyTable, is_readonly: 1 }], [{ table: 'events', num_tries: 9, last_exception: NO_SPACE }]).cause).toBe('disk_full');
    expect(judgeReplica('r', [healthyTable], [{ table: 'events', num_tries: 9, last_exception: ZK_LOST }]).cause).toBe('zookeeper');
    expect(judgeReplica('r', [healthyTable], [{ table: 'events', num_tries: 9, last_exception: NOT_FOUND }]).cause).toBe('other');
  });

  it('keeps the line bounded whatever the server says', () => {
    const failures = Array.from({ length: 50 }, (_, i) => ({ table: `t${i}`, num_tries: 10, last_exception: `${NO_SPACE} ${'x'.repeat(100_000)}` }));
    const line = describeReplica(judgeReplica('r', [healthyTable], failures));
    expect(line.length).toBeLessThan(400);
    expect(line).toContain('failing in t0, t1, t2 and 47 more');
  });
});

describe('judgeUnanswered', () => {
  it('calls a server that does not answer unreachable, and keeps the cause of one that answers with an error', () => {
    expect(describeReplica(judgeUnanswered('127.0.0.1:8224', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8224'), { code: 'ECONNREFUSED' })))).toBe(
      'clickhouse-replica 127.0.0.1:8224: unreachable (cause: unreachable; replica check failed: connect ECONNREFUSED 127.0.0.1:8224)',
    );
    expect(judgeUnanswered('r', new Error('Timeout error.')).cause).toBe('unreachable');
    expect(judgeUnanswered('r', new Error(ZK_LOST)).cause).toBe('zookeeper');
    expect(judgeUnanswered('r', new Error('Code: 192, e.displayText() = DB::Exception: Unknown user reader')).cause).toBe('other');
  });
});

describe('names without secrets', () => {
  it('names a server host:port, never its credentials or path', () => {
    expect(replicaName('http://writer:s3cret@ch-1.internal:8123/')).toBe('ch-1.internal:8123');
    expect(replicaName('https://ch.example.com')).toBe('ch.example.com:443');
    expect(replicaName('not a url')).toBe('unparsable-url');
  });

  it('drops user:password@ of a URL in a server text and keeps its first line', () => {
    expect(excerpt('Code: 86, fetch from http://interserver:pw@10.0.0.2:9009/?endpoint=x failed\nstack trace')).toBe(
      'Code: 86, fetch from http://10.0.0.2:9009/?endpoint=x failed',
    );
  });
});

/**
 * crm-sink's Redis stores under the crm-sink role's user (redis-acl.ts), on a redis-server of
 * the test's own with the role users: the park, the record state and its ledgers, the pending
 * links and the shared token buckets all work with its grants. The parked events are crm-sink's
 * alone: the gateway's and the console's users reach none of their keys.
 */
import type { ConsumedMessage } from '@ingest/platform';
import { type RedisWithRoles, startRedisWithRoles } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParkStore, type ParkedEntry } from './park/park.store.js';
import { createSharedTokenBuckets } from './rate/shared-token-bucket.js';
import { createPendingLinksStore } from './sync/pending-links.store.js';
import { createRecordStateStore } from './sync/record-state.store.js';
import { createIdentityWaitStore } from './identity/identity-wait.store.js';

const PREFIX = 'sink:';
const LIMITS = { maxEventsPerAccount: 100, maxBytesPerAccount: 1e6, maxEventsTotal: 100, maxBytesTotal: 1e6 };
let own: RedisWithRoles;

beforeAll(async () => {
  own = await startRedisWithRoles({ keyPrefix: PREFIX });
});

afterAll(async () => {
  await own?.close();
});

const entry = (offset: number): ParkedEntry => {
  const message: ConsumedMessage = {
    topic: 'events.unique',
    partition: 0,
    offset: String(offset),
    key: Buffer.from('acc_sink'),
    value: Buffer.from('{"v":1}'),
    headers: {},
    timestamp: 1_700_000_000_000 + offset,
  };
  return { message, parkedAtMs: 1_700_000_000_000 };
};

describe("crm-sink's stores under its Redis user", () => {
  it('events waiting for their identify: added within the bound, claimed, rescheduled and removed; the gateway reaches none', async () => {
    const sink = await own.connectAs('crm-sink');
    const waits = createIdentityWaitStore({ redis: sink, keyPrefix: PREFIX });
    const waiting = { accountId: 'acc_sink', eventId: 'e1', message: entry(1).message, deadlineMs: 1_700_000_100_000 };
    expect(await waits.add(waiting, 1)).toBe(true);
    expect(await waits.add(waiting, 1)).toBe(true);
    expect(await waits.add({ ...waiting, eventId: 'e2' }, 1)).toBe(false);
    expect(await waits.waiting('acc_sink')).toBe(1);
    const claimed = await waits.claim(Date.now(), 10, 60_000);
    expect(claimed.map((w) => [w.eventId, w.deadlineMs, w.message.offset])).toEqual([['e1', waiting.deadlineMs, '1']]);
    expect(await waits.claim(Date.now(), 10, 60_000)).toEqual([]);
    await waits.later(waiting, 0);
    expect(await waits.claim(Date.now(), 10, 60_000)).toHaveLength(1);
    await waits.remove(waiting);
    expect(await waits.waiting('acc_sink')).toBe(0);
    const gateway = createIdentityWaitStore({ redis: await own.connectAs('gateway'), keyPrefix: PREFIX });
    await expect(gateway.waiting('acc_sink')).rejects.toThrow(/NOPERM/);
  });

  it('parks, peeks, reschedules, leases and drains; the gateway and the console cannot read or forge parked events', async () => {
    const store = createParkStore({ redis: await own.connectAs('crm-sink'), keyPrefix: PREFIX, limits: LIMITS });
    expect(await store.park('acc_sink', [entry(1), entry(2)], { force: true, dueAtMs: 5_000, reason: 'rate limited' })).toEqual({ parked: true, accepted: 2 });
    expect((await store.peek('acc_sink', 10)).entries.map((e) => e.message.offset)).toEqual(['1', '2']);
    await store.reschedule('acc_sink', 6_000, 'still limited');
    await store.hold('acc_sink', 7_000, 6_500);
    expect(await store.due(8_000, 10)).toEqual(['acc_sink']);
    const lease = await store.lease('acc_sink', 5_000);
    expect(await lease?.renew()).toBe(true);
    await lease?.release();
    expect(await store.totals()).toMatchObject({ accounts: 1, events: 2 });

    for (const role of ['gateway', 'console'] as const) {
      const other = createParkStore({ redis: await own.connectAs(role), keyPrefix: PREFIX, limits: LIMITS });
      await expect(other.peek('acc_sink', 10)).rejects.toThrow(/NOPERM|can't/);
      await expect(other.park('acc_sink', [entry(3)], { force: true, dueAtMs: 0 })).rejects.toThrow(/NOPERM|can't/);
      await expect(other.totals()).rejects.toThrow(/NOPERM|can't/);
    }
    const { entries } = await store.peek('acc_sink', 10);
    expect(entries).toHaveLength(2);
    await store.remove(
      'acc_sink',
      2,
      entries.reduce((sum, e) => sum + e.bytes, 0),
    );
    expect(await store.totals()).toMatchObject({ accounts: 0, events: 0 });
  });

  it('applies record state once per ledger key, keeps pending links, and draws from the shared token buckets', async () => {
    const redis = await own.connectAs('crm-sink');
    const records = createRecordStateStore({ redis, keyPrefix: PREFIX, ledgerTtlSeconds: 60, stateTtlSeconds: 60 });
    const ledger = 'crm:acc_sink:e1:r1';
    expect((await records.apply('acc_sink', 'contact', 'a@x.io', ledger, [], ['inc', 'n:n', '1'])).applied).toBe(true);
    expect((await records.apply('acc_sink', 'contact', 'a@x.io', ledger, [], ['inc', 'n:n', '1'])).applied).toBe(false);
    await records.markActivitiesDone([ledger]);
    expect(await records.activitiesDone([ledger])).toEqual(new Set([ledger]));
    expect(await records.present('acc_sink', 'contact', 'a@x.io', ['n:n'])).toEqual(new Set(['n:n']));

    const links = createPendingLinksStore({ redis, keyPrefix: PREFIX, ttlSeconds: 60 });
    await links.add('acc_sink', [{ email: 'a@x.io', domain: 'x.io' }]);
    expect(await links.waiting('acc_sink', ['x.io'])).toEqual([{ email: 'a@x.io', domain: 'x.io' }]);
    await links.remove('acc_sink', [{ email: 'a@x.io', domain: 'x.io' }]);
    expect(await links.waiting('acc_sink', ['x.io'])).toEqual([]);

    for (const bucket of ['crm:rate', 'crm:connection-checks']) {
      const take = createSharedTokenBuckets({ redis, keyPrefix: PREFIX, bucket, rate: { ratePerSecond: 1, burst: 2 } })('acc_sink');
      expect(await take()).toBe(0);
    }
  });
});

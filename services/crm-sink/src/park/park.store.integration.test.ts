/**
 * Real server: Redis. The park of blocked accounts: order, caps per account and in total, the
 * schedule, cleanup when drained, and the resume lease.
 */
import { type ConsumedMessage, createRedis, type Redis } from '@ingest/platform';
import { integrationEnv, uniqueSuffix } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createParkStore, type ParkedEntry } from './park.store.js';

let redis: Redis & { close(): Promise<void> };
const keyPrefix = `t${uniqueSuffix()}:`;

beforeAll(async () => {
  redis = createRedis({ url: integrationEnv().redisUrl });
  await redis.connect();
});
afterAll(async () => {
  const keys = await redis.keys(`${keyPrefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.close();
});

const entry = (offset: number, size = 10): ParkedEntry => {
  const message: ConsumedMessage = {
    topic: 'events.unique',
    partition: offset % 3,
    offset: String(offset),
    key: Buffer.from(`acc:${offset}`),
    value: Buffer.from('x'.repeat(size)),
    headers: { h: '1' },
    timestamp: 1_700_000_000_000 + offset,
  };
  return { message, parkedAtMs: 1_700_000_000_000 };
};
const offsets = (entries: ParkedEntry[]) => entries.map((e) => Number(e.message.offset));

describe('park store', () => {
  it('parks only when forced or already parked, keeps arrival order, and forgets an account once drained', async () => {
    const store = createParkStore({
      redis,
      keyPrefix: `${keyPrefix}a:`,
      limits: { maxEventsPerAccount: 100, maxBytesPerAccount: 1e6, maxEventsTotal: 100, maxBytesTotal: 1e6 },
    });
    expect(await store.park('acc', [entry(1)], { force: false })).toEqual({ parked: false, accepted: 0 });
    expect(await store.park('acc', [entry(1), entry(2)], { force: true, dueAtMs: 5_000, reason: 'rate limited' })).toEqual({ parked: true, accepted: 2 });
    expect(await store.park('acc', [entry(3)], { force: false })).toEqual({ parked: true, accepted: 1 });
    expect(await store.due(4_999, 10)).toEqual([]);
    expect(await store.due(5_000, 10)).toEqual(['acc']);

    const chunk = await store.peek('acc', 2);
    expect(offsets(chunk.entries)).toEqual([1, 2]);
    expect(chunk.entries[0]?.message).toEqual(entry(1).message);
    expect(await store.totals()).toMatchObject({ accounts: 1, events: 3 });

    await store.reschedule('acc', 9_000, 'still blocked');
    expect((await store.peek('acc', 10)).attempts).toBe(1);
    expect(await store.due(8_999, 10)).toEqual([]);

    await store.remove(
      'acc',
      2,
      chunk.entries.reduce((n, e) => n + e.bytes, 0),
    );
    expect(offsets((await store.peek('acc', 10)).entries)).toEqual([3]);
    const rest = await store.peek('acc', 10);
    await store.remove('acc', 1, rest.entries[0]?.bytes ?? 0);
    expect(await store.totals()).toEqual({ accounts: 0, events: 0, bytes: 0 });
    expect(await store.park('acc', [entry(4)], { force: false })).toEqual({ parked: false, accepted: 0 });
  });

  it('refuses what is over the per-account or total caps, and every later event of the batch', async () => {
    const store = createParkStore({
      redis,
      keyPrefix: `${keyPrefix}b:`,
      limits: { maxEventsPerAccount: 3, maxBytesPerAccount: 1e6, maxEventsTotal: 5, maxBytesTotal: 1e6 },
    });
    expect(await store.park('one', [entry(1), entry(2), entry(3), entry(4)], { force: true })).toEqual({ parked: true, accepted: 3 });
    expect(await store.park('two', [entry(5), entry(6), entry(7)], { force: true })).toEqual({ parked: true, accepted: 2 });
    const bytes = createParkStore({
      redis,
      keyPrefix: `${keyPrefix}c:`,
      limits: { maxEventsPerAccount: 100, maxBytesPerAccount: 700, maxEventsTotal: 100, maxBytesTotal: 1e6 },
    });
    expect(await bytes.park('big', [entry(1, 300), entry(2, 300), entry(3, 10)], { force: true })).toEqual({ parked: true, accepted: 1 });
  });

  it('lets one replica at a time hold an account’s resume lease', async () => {
    const store = createParkStore({
      redis,
      keyPrefix: `${keyPrefix}d:`,
      limits: { maxEventsPerAccount: 1, maxBytesPerAccount: 1, maxEventsTotal: 1, maxBytesTotal: 1 },
    });
    const first = await store.lease('acc', 10_000);
    expect(first).toBeDefined();
    expect(await store.lease('acc', 10_000)).toBeUndefined();
    expect(await first?.renew()).toBe(true);
    await first?.release();
    const second = await store.lease('acc', 10_000);
    expect(second).toBeDefined();
    expect(await first?.renew()).toBe(false);
  });
});

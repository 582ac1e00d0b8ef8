/**
 * The sync health store against the real Redis (the shared test server; keys under a prefix of
 * this file's own): counts by hour, state changes and their since times, the unhealthy index the
 * metrics read, and what a day of counts costs in Redis memory.
 */
import { createRedis, type Redis } from '@ingest/platform';
import { integrationEnv, uniqueSuffix } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYNC_HEALTH_HISTORY_HOURS } from './sync-health.js';
import { createSyncHealthStore, type SyncHealthStore, syncHealthKeys } from './sync-health.store.js';

const T = Date.UTC(2026, 10, 27, 10, 15, 0);
const HOUR = 3_600_000;
let redis: Redis;
let prefix: string;
let store: SyncHealthStore;

beforeAll(async () => {
  redis = createRedis({ url: integrationEnv().redisUrl });
  await redis.connect();
  prefix = `t${uniqueSuffix()}:`;
  store = createSyncHealthStore({ redis, keyPrefix: prefix });
});

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  redis.disconnect();
});

describe('sync health store', () => {
  it('adds outcomes per hour and reads the last week hour by hour, with nothing for other accounts', async () => {
    await store.count('acct-a', { synced: 3, skipped: 1 }, T);
    await store.count('acct-a', { synced: 2, failed: 4 }, T + 60_000);
    await store.count('acct-a', { failed: 1 }, T - 12 * HOUR);
    await store.count('acct-b', { synced: 100 }, T);
    await store.count('acct-a', { synced: 0 }, T);

    const view = await store.read('acct-a', T + 120_000);
    expect(view.current).toBeUndefined();
    expect(view.hours).toHaveLength(SYNC_HEALTH_HISTORY_HOURS);
    expect(view.hours.at(-1)).toEqual({ hour: '2026-11-27T10:00:00.000Z', synced: 5, skipped: 1, failed: 4 });
    expect(view.hours.at(-13)).toEqual({ hour: '2026-11-26T22:00:00.000Z', synced: 0, skipped: 0, failed: 1 });
    expect(view.hours.reduce((sum, h) => sum + h.synced + h.skipped + h.failed, 0)).toBe(11);
    const ttl = await redis.ttl(syncHealthKeys(prefix).day('acct-a', '20261127'));
    expect(ttl).toBeGreaterThan(7 * 24 * 3600);
  });

  it('keeps when a state began and when the account stopped running; running clears both the index and unhealthySince', async () => {
    const id = 'acct-state';
    await store.change(id, { state: 'running', success: true }, T);
    await store.change(id, { state: 'parked', reason: 'the CRM does not answer' }, T + 1000);
    await store.change(id, { state: 'parked', reason: 'the CRM is rate limiting this account' }, T + 2000);
    await store.change(id, { state: 'failing', reason: 'events failed: hubspot answered 400', failure: true }, T + 3000);
    expect((await store.read(id, T + 3000)).current).toEqual({
      v: 1,
      state: 'failing',
      reason: 'events failed: hubspot answered 400',
      sinceMs: T + 3000,
      unhealthySinceMs: T + 1000,
      updatedAtMs: T + 3000,
      lastSuccessAtMs: T,
      lastFailureAtMs: T + 3000,
    });
    expect(await redis.zscore(syncHealthKeys(prefix).unhealthy, id)).toBe(String(T + 1000));

    await store.change(id, { state: 'running', success: true }, T + 4000);
    const back = (await store.read(id, T + 4000)).current;
    expect(back).toMatchObject({ state: 'running', sinceMs: T + 4000, lastSuccessAtMs: T + 4000, lastFailureAtMs: T + 3000 });
    expect(back?.reason).toBeUndefined();
    expect(back?.unhealthySinceMs).toBeUndefined();
    expect(await redis.zscore(syncHealthKeys(prefix).unhealthy, id)).toBeNull();
  });

  it('clears a broken credential only from that state (onlyFrom)', async () => {
    const id = 'acct-cred';
    await store.change(id, { state: 'credential_broken', reason: 'refresh token revoked', failure: true }, T);
    expect(await store.change(id, { state: 'running', onlyFrom: 'credential_broken' }, T + 1)).toBe(true);
    await store.change(id, { state: 'parked', reason: 'the CRM keeps failing' }, T + 2);
    expect(await store.change(id, { state: 'running', onlyFrom: 'credential_broken' }, T + 3)).toBe(false);
    expect((await store.read(id, T + 3)).current?.state).toBe('parked');
  });

  it('lists the accounts unhealthy longest, up to the limit, counts the stuck ones, and drops entries whose state expired', async () => {
    const own = createSyncHealthStore({ redis, keyPrefix: `${prefix}u:` });
    for (let i = 0; i < 5; i++) await own.change(`acct-${i}`, { state: i % 2 ? 'failing' : 'parked', reason: 'x' }, T + i * 60_000);
    await own.change('acct-ok', { state: 'running', success: true }, T);
    const found = await own.unhealthy(T + 10 * 60_000, { limit: 3, stuckAfterMs: 8 * 60_000 });
    expect(found.total).toBe(5);
    expect(found.stuck).toBe(3);
    expect(found.oldest).toEqual([
      { accountId: 'acct-0', state: 'parked', unhealthySinceMs: T },
      { accountId: 'acct-1', state: 'failing', unhealthySinceMs: T + 60_000 },
      { accountId: 'acct-2', state: 'parked', unhealthySinceMs: T + 120_000 },
    ]);

    await redis.del(syncHealthKeys(`${prefix}u:`).state('acct-0'));
    const after = await own.unhealthy(T + 10 * 60_000, { limit: 3, stuckAfterMs: 8 * 60_000 });
    expect(after.oldest.map((a) => a.accountId)).toEqual(['acct-1', 'acct-2']);
    expect(after.total).toBe(4);
    expect(await redis.zcard(syncHealthKeys(`${prefix}u:`).unhealthy)).toBe(4);
  });

  it('costs one round trip per flush and about a kilobyte per account and busy day', async () => {
    const id = 'acct-cost';
    const flushes = 200;
    const started = performance.now();
    for (let i = 0; i < flushes; i++) {
      await Promise.all([
        store.count(id, { synced: 40, skipped: 3, failed: 1 }, T + i * 1000),
        store.change(id, { state: 'running', success: true, failure: true }, T + i * 1000),
      ]);
    }
    const perFlushMs = (performance.now() - started) / flushes;
    // Every hour of a day with all three outcomes: the most a day hash holds.
    for (let h = 0; h < 24; h++) await store.count(id, { synced: 1_000_000, skipped: 1000, failed: 1000 }, Date.UTC(2026, 10, 25, h, 30));
    const dayBytes = Number(await redis.memory('USAGE', syncHealthKeys(prefix).day(id, '20261125')));
    const stateBytes = Number(await redis.memory('USAGE', syncHealthKeys(prefix).state(id)));
    console.info(`sync health: ${perFlushMs.toFixed(2)} ms per flush (count + state), day hash ${dayBytes} B, state hash ${stateBytes} B`);
    expect(dayBytes).toBeLessThan(2048);
    expect(stateBytes).toBeLessThan(1024);
  });
});

/**
 * Real servers: Redis. Links waiting for their company: bounded per company, expiring, and
 * readable when a newer writer adds fields to a member.
 */
import { createRedis, type Redis } from '@ingest/platform';
import { integrationEnv, uniqueSuffix } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPendingLinksStore, type PendingLinksStore } from './pending-links.store.js';

let redis: Redis & { close(): Promise<void> };
let store: PendingLinksStore;
const prefix = `t${uniqueSuffix()}:`;

beforeAll(async () => {
  redis = createRedis({ url: integrationEnv().redisUrl });
  await redis.connect();
  store = createPendingLinksStore({ redis, keyPrefix: prefix, ttlSeconds: 600, maxPerCompany: 3 });
});

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.close();
});

describe('links waiting for their company', () => {
  it('keeps at most the cap per company, each link once, with a TTL; forgets what was made', async () => {
    const links = ['a', 'b', 'c', 'd', 'e'].map((n) => ({ email: `${n}@acme.io`, domain: 'acme.io' }));
    await store.add('acc_1', [...links, links[0] as (typeof links)[number]]);
    await store.add('acc_1', [{ email: 'z@other.io', domain: 'other.io' }]);
    const waiting = await store.waiting('acc_1', ['acme.io', 'other.io', 'none.io']);
    expect(waiting.filter((l) => l.domain === 'acme.io')).toHaveLength(3);
    expect(waiting.filter((l) => l.domain === 'other.io')).toEqual([{ email: 'z@other.io', domain: 'other.io' }]);
    // Another account's links are its own.
    expect(await store.waiting('acc_2', ['acme.io'])).toEqual([]);
    const [key] = await redis.keys(`${prefix}crm:links:{acc_1}:company:acme.io`);
    expect(await redis.ttl(key as string)).toBeGreaterThan(590);

    await store.remove('acc_1', waiting);
    expect(await store.waiting('acc_1', ['acme.io', 'other.io'])).toEqual([]);
  });

  it('reads members a newer writer extended, and skips what it cannot read', async () => {
    const key = `${prefix}crm:links:{acc_3}:company:acme.io`;
    await redis.sadd(key, JSON.stringify({ v: 2, email: 'new@acme.io', label: 'primary' }), 'not json', JSON.stringify({ v: 1 }));
    expect(await store.waiting('acc_3', ['acme.io'])).toEqual([{ email: 'new@acme.io', domain: 'acme.io' }]);
  });
});

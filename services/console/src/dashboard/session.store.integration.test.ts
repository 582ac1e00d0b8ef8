/**
 * Real server: Redis. Sessions end after their idle time without use and at their absolute
 * limit whatever happens; only a hash of the session id is stored.
 */
import { createRedis, type Redis } from '@ingest/platform';
import { integrationEnv, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessionStore, csrfTokenMatches } from './session.store.js';

let redis: Redis & { close(): Promise<void> };
const owner = { accountId: 'acc_test', ownerId: 'own_test', email: 'ada@example.com' };

beforeAll(async () => {
  redis = createRedis({ url: integrationEnv().redisUrl });
  await redis.connect();
});

afterAll(async () => {
  await redis?.close();
});

describe('session store', () => {
  it('keeps only a hash of the session id in Redis', async () => {
    const keyPrefix = `t${uniqueSuffix()}:`;
    const store = createSessionStore({ redis, keyPrefix, idleSeconds: 60, maxSeconds: 600 });
    const { token } = await store.create(owner);
    const keys = await redis.keys(`${keyPrefix}*`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toContain(token);
    expect(await redis.get(keys[0] ?? '')).not.toContain(token);
    await store.destroy(token);
    expect(await store.get(token)).toBeUndefined();
  });

  it('ends a session that is not used for its idle time', async () => {
    const store = createSessionStore({ redis, keyPrefix: `t${uniqueSuffix()}:`, idleSeconds: 1, maxSeconds: 600 });
    const { token } = await store.create(owner);
    expect(await store.get(token)).toMatchObject(owner);
    await waitFor(async () => (await store.get(token)) === undefined || undefined, {
      description: 'idle session expired',
      timeoutMs: 10_000,
      intervalMs: 1_500,
    });
  });

  it('ends a session at its absolute limit even when it is used all the time', async () => {
    let now = Date.now();
    const store = createSessionStore({ redis, keyPrefix: `t${uniqueSuffix()}:`, idleSeconds: 3600, maxSeconds: 60, now: () => now });
    const { token, session } = await store.create(owner);
    now += 59_000;
    expect(await store.get(token)).toBeDefined();
    now += 2_000;
    expect(await store.get(token)).toBeUndefined();
    expect(csrfTokenMatches(session, session.csrfToken)).toBe(true);
    expect(csrfTokenMatches(session, `${session.csrfToken}x`)).toBe(false);
  });

  it('treats malformed cookie values as no session', async () => {
    const store = createSessionStore({ redis, idleSeconds: 60, maxSeconds: 600 });
    for (const bad of ['', 'short', '../../etc', 'x'.repeat(5000)]) expect(await store.get(bad)).toBeUndefined();
  });
});

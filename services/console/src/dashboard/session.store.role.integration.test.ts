/**
 * Dashboard sessions under the console's Redis user (redis-acl.ts), on a redis-server of the
 * test's own with the role users: the console creates, renews and ends sessions; no other role
 * can read one, forge one for any owner, or end one (NOPERM).
 */
import { createHash } from 'node:crypto';
import { type Redis, type RedisRole } from '@ingest/platform';
import { type RedisWithRoles, startRedisWithRoles } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSessionStore } from './session.store.js';

let own: RedisWithRoles;
const as = (role: RedisRole): Promise<Redis> => own.connectAs(role);

beforeAll(async () => {
  own = await startRedisWithRoles();
});

afterAll(async () => {
  await own?.close();
});

describe('dashboard sessions under the console’s Redis user', () => {
  it('the console creates, reads and ends sessions; the gateway, the processor and crm-sink can neither read nor forge one', async () => {
    const sessions = createSessionStore({ redis: await as('console'), idleSeconds: 60, maxSeconds: 600 });
    const owner = { accountId: 'acc_sess', ownerId: 'own_1', email: 'o@example.com' };
    const { token, session } = await sessions.create(owner);
    expect(await sessions.get(token)).toEqual(session);

    const key = `dashboard:session:${createHash('sha256').update(token).digest('hex')}`;
    for (const role of ['gateway', 'processor', 'crm-sink'] as const) {
      const redis = await as(role);
      await expect(redis.get(key)).rejects.toThrow(/^NOPERM/);
      await expect(redis.set(`dashboard:session:${'0'.repeat(64)}`, JSON.stringify({ ...owner, csrfToken: 'x', createdAtMs: Date.now() }))).rejects.toThrow(
        /^NOPERM/,
      );
      const forged = createSessionStore({ redis, idleSeconds: 60, maxSeconds: 600 });
      await expect(forged.create(owner)).rejects.toMatchObject({ code: 'redis_unavailable' });
      await expect(forged.destroy(token)).rejects.toThrow(/NOPERM/);
    }
    expect(await sessions.get(token)).toEqual(session);
    await sessions.destroy(token);
    expect(await sessions.get(token)).toBeUndefined();
  });
});

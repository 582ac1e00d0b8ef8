/**
 * A redis-server of the test's own with the append-only file on, as the stack and the
 * deployments run it: the counter is persisted, the memory of seen ids is not (RESERVE_EVENTS).
 * Its own server because the file's growth is per server, and the shared one is written by every
 * other test at once.
 */
import { createRedis, type Redis } from '@ingest/platform';
import { type OwnRedis, startOwnRedis } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Account } from '../control-plane/types.js';
import { createAllowance } from './allowance.js';

const account: Account = { id: 'acc_persist', name: 'p', plan: 'growth', createdAt: '', updatedAt: '' };
const AT = Date.UTC(2026, 10, 12, 10, 7);
const KEY = Buffer.from('allowance-persistence-test-key-0123456789');
let own: OwnRedis;
const clients: Redis[] = [];

beforeAll(async () => {
  own = await startOwnRedis({ appendOnly: true });
});

afterAll(async () => {
  for (const c of clients) c.disconnect();
  await own?.close();
});

function connect(): Redis {
  const redis = createRedis({ url: own.url });
  clients.push(redis);
  return redis;
}

async function aofSize(redis: Redis): Promise<number> {
  const info = await redis.info('persistence');
  expect(info, 'the own Redis runs with the append-only file').toMatch(/^aof_enabled:1/m);
  return Number(/^aof_current_size:(\d+)/m.exec(info)?.[1]);
}

const ids = (n: number) => Array.from({ length: n }, (_, i) => `evt-${i}`);

describe('allowance persistence (append-only file)', () => {
  it('persists the counter but not the memory of seen ids: after a restart a retry is counted again', async () => {
    const redis = connect();
    const allowance = createAllowance({ redis, now: () => AT, seenIdsKey: KEY });
    const before = await aofSize(redis);
    const first = await allowance.reserveEvents(account, ids(2_000), AT);
    expect(first.decisions.every((d) => d === 'counted')).toBe(true);
    // A propagated SADD was about 100 bytes per id; what is left is the counter's few commands per call.
    const grown = (await aofSize(redis)) - before;
    expect(grown / 2_000, `the append-only file grew ${grown} bytes for 2,000 ids`).toBeLessThan(5);
    const retry = await allowance.reserveEvents(account, ids(2_000), AT + 1_000);
    expect(retry.decisions.every((d) => d === 'repeat')).toBe(true);
    expect(retry.state.used).toBe(2_000);

    await own.stop();
    await own.start();
    // The same key: what is lost is Redis's memory, not the key's.
    const restarted = createAllowance({ redis: connect(), now: () => AT, seenIdsKey: KEY });
    expect((await restarted.state(account)).used).toBe(2_000);
    // Forgotten with the restart: counted once more, until the allowance reconciler corrects it.
    const afterRestart = await restarted.reserveEvents(account, ids(10), AT + 2_000);
    expect(afterRestart.decisions).toEqual(Array(10).fill('counted'));
    expect(afterRestart.state.used).toBe(2_010);
  });
});

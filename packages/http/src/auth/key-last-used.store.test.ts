import type { Logger, Redis } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { createKeyLastUsedStore, keyLastUsedKey } from './key-last-used.store.js';

/** Records SET calls only: the throttle is what is tested here (Redis itself in the dashboard integration test). */
function recordingRedis() {
  const sets: [string, string][] = [];
  const redis = { set: async (key: string, value: string) => void sets.push([key, value]) } as unknown as Redis;
  return { redis, sets };
}
const logger = { warn: () => undefined } as unknown as Logger;

describe('API key use recording', () => {
  it('writes a key at most once a minute per replica, each key on its own', () => {
    let now = Date.UTC(2026, 0, 1, 12, 0, 0);
    const { redis, sets } = recordingRedis();
    const store = createKeyLastUsedStore({ redis, logger, keyPrefix: 'p:', now: () => now });
    store.touched('key_a');
    store.touched('key_a');
    store.touched('key_b');
    now += 59_999;
    store.touched('key_a');
    expect(sets.map(([k]) => k)).toEqual([keyLastUsedKey('key_a', 'p:'), keyLastUsedKey('key_b', 'p:')]);
    now += 1;
    store.touched('key_a');
    expect(sets).toHaveLength(3);
    expect(sets[2]).toEqual(['p:apikey:last-used:key_a', '2026-01-01T12:01:00.000Z']);
  });
});

/**
 * Real servers: Redis. The dry-run mirrors the sink's Lua apply script in memory
 * (simulateApply in @ingest/domain); this holds the two to the same results, so the dry-run's
 * values are the ones the sink writes.
 */
import { buildRecordWrite, type PlannedOperation, type RecordState, simulateApply, type StateDelta } from '@ingest/domain';
import { createRedis, type Redis } from '@ingest/platform';
import { integrationEnv, uniqueSuffix } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRecordStateStore, type RecordStateStore } from './record-state.store.js';

let redis: Redis & { close(): Promise<void> };
let store: RecordStateStore;
const prefix = `t${uniqueSuffix()}:`;

beforeAll(async () => {
  redis = createRedis({ url: integrationEnv().redisUrl });
  await redis.connect();
  store = createRecordStateStore({ redis, keyPrefix: prefix, ledgerTtlSeconds: 600, stateTtlSeconds: 600 });
});

afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.close();
});

const op: PlannedOperation = {
  ruleId: 'r',
  object: 'contact',
  key: { email: 'a@x.io' },
  set: {},
  setOnce: { src: 'ads', seen: 'x' },
  increment: { n: 0.1, big: 1 },
  max: { last: 1732000000123 },
  min: { first: 1732000000123 },
  append: { tags: ['a', 2, { b: true }], empty: ['x'] },
  skipped: [],
};

describe('simulateApply mirrors the apply script', () => {
  it('gives the same record write for seeds, increments (fractions too), max/min, appends and setOnce, step after step', async () => {
    const steps: { seeds: StateDelta; delta: StateDelta }[] = [
      {
        seeds: ['seed', 'n:big', '9007199254740990', 'seed', 'o:seen', '{"crm":1}', 'seed', 'l:empty', '[]'],
        delta: ['inc', 'n:n', '0.1', 'inc', 'n:big', '1'],
      },
      { seeds: [], delta: ['inc', 'n:n', '0.2', 'max', 'n:last', '1732000000123', 'min', 'n:first', '1732000000123'] },
      { seeds: [], delta: ['max', 'n:last', '1700000000000', 'min', 'n:first', '1700000000000', 'app', 'l:tags', '"a"', 'app', 'l:tags', '2'] },
      { seeds: [], delta: ['app', 'l:tags', '{"b":true}', 'app', 'l:empty', '"x"', 'once', 'o:src', '{"v":"ads"}', 'once', 'o:seen', '{"v":"x"}'] },
      { seeds: [], delta: ['once', 'o:src', '{"v":"later"}', 'inc', 'n:n', '-0.3'] },
      // Sets: by event time, then eventId in byte order (the Lua script must not use the locale's collation).
      { seeds: [], delta: ['set', 't:plan', '1700000000000|evt-b'] },
      { seeds: [], delta: ['set', 't:plan', '1699999999999|evt-z', 'inc', 'n:n', '1'] },
      { seeds: [], delta: ['set', 't:plan', '1700000000000|evt-a', 'set', 't:name', '5|Z'] },
      { seeds: [], delta: ['set', 't:plan', '1700000000000|evt-é', 'set', 't:name', '5|a'] },
      { seeds: [], delta: ['set', 't:name', '5|A-b'] },
    ];
    const expected = { 't:plan': '1700000000000|evt-é', 't:name': '5|a' };
    let simulated: RecordState = {};
    for (const [i, step] of steps.entries()) {
      const { state } = await store.apply('acc', 'contact', 'a@x.io', `ledger-${i}`, step.seeds, step.delta);
      simulated = simulateApply(simulated, step.seeds, step.delta);
      const ops = [{ op, version: '1|e' }];
      expect(buildRecordWrite('contact', 'a@x.io', ops, simulated)).toEqual(buildRecordWrite('contact', 'a@x.io', ops, state));
      expect(Object.keys(simulated).sort()).toEqual(Object.keys(state).sort());
      expect([simulated['t:plan'], simulated['t:name']]).toEqual([state['t:plan'], state['t:name']]);
      if (i === steps.length - 1) expect(state).toMatchObject(expected);
    }
  });
});

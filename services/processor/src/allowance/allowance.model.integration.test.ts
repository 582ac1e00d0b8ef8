/**
 * Real server: Redis. Model-based test of the allowance: random sequences of API requests (new ids,
 * repeats inside and across requests, writes that fail), bulk and CSV jobs (in-job repeats,
 * invalid rows), job runs, processor restarts, reconciliation rounds and clock moves across
 * hours and a month's end, against the real allowance and allowance reconciler with a simulated
 * clock and pipeline. Every operation is held to the model (allowance.model.fixture.ts); fast-check
 * shrinks a failing sequence and prints it with its seed.
 *
 * METERING_MODEL_RUNS sets the number of sequences (default 200); METERING_MODEL_SEED replays one.
 */
import { PLAN_LIMITS } from '@ingest/domain';
import { createRedis } from '@ingest/platform';
import { integrationEnv, uniqueSuffix } from '@ingest/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { AllowanceModelHarness } from './allowance.model-harness.fixture.js';
import { opArbitrary, startArbitrary } from './allowance.model.fixture.js';

let redis: ReturnType<typeof createRedis>;
const prefix = `t${uniqueSuffix()}:`;

beforeAll(async () => {
  redis = createRedis({ url: integrationEnv().redisUrl });
  await redis.connect();
});

afterAll(async () => {
  // Everything the runs wrote is under this file's prefix.
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.del(...keys);
  } while (cursor !== '0');
  await redis?.close();
});

const runs = Number(process.env.METERING_MODEL_RUNS ?? 200);
const seed = process.env.METERING_MODEL_SEED === undefined ? undefined : Number(process.env.METERING_MODEL_SEED);

describe('allowance model (in process, real Redis)', () => {
  it(`holds for ${runs} random sequences`, { timeout: 600_000 }, async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(startArbitrary, fc.array(opArbitrary(2, { api: 100, job: 300 }), { minLength: 1, maxLength: 40 }), async (start, ops) => {
        const id = `${uniqueSuffix()}-${run++}`;
        const accounts = [0, 1].map((i) => ({ id: `acc_m${id}_${i}`, name: 'Model', plan: 'free' as const, createdAt: '', updatedAt: '' }));
        const harness = new AllowanceModelHarness(redis, prefix, accounts, [PLAN_LIMITS.free, PLAN_LIMITS.free], start);
        for (const op of ops) await harness.apply(op);
        await harness.settle();
      }),
      { numRuns: runs, ...(seed === undefined ? {} : { seed }), endOnFailure: false },
    );
  });
});

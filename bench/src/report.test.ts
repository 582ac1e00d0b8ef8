import { describe, expect, it } from 'vitest';
import { type BenchResult, ratiosAndTargets } from './report.js';

function result(allowance?: BenchResult['allowance']): BenchResult {
  return {
    startedAt: '',
    machine: { cores: 2, node: 'v20', loadAverage: [] },
    setup: {},
    notes: [],
    baselines: {},
    ratios: {},
    targets: [],
    errors: [],
    allowance,
  };
}

describe('allowance targets', () => {
  const run = (bytesPerId: number, redisCpuSecondsPerMillion: number) => ({ bytesPerId, redisCpuSecondsPerMillion, seconds: 1 });

  it('judges bytes per id against 40 and Redis CPU against half the previous implementation', () => {
    const r = result({ ids: 500_000, idsPerRequest: 100, plan: 'growth', baseline: run(93, 3.0), current: run(11, 1.4) });
    ratiosAndTargets(r);
    const verdicts = Object.fromEntries(r.targets.filter((t) => t.name.startsWith('allowance')).map((t) => [t.name, t.verdict]));
    expect(verdicts).toEqual({ 'allowance <= 40 B per remembered id': 'pass', 'allowance Redis CPU per 1M ids <= 50% of the previous implementation': 'pass' });

    const worse = result({ ids: 500_000, idsPerRequest: 100, plan: 'growth', baseline: run(93, 3.0), current: run(41, 1.6) });
    ratiosAndTargets(worse);
    expect(worse.targets.filter((t) => t.name.startsWith('allowance')).map((t) => t.verdict)).toEqual(['FAIL', 'FAIL']);
  });

  it('says when the phase did not run', () => {
    const r = result();
    ratiosAndTargets(r);
    expect(r.targets.filter((t) => t.name.startsWith('allowance')).map((t) => t.verdict)).toEqual(['n/a', 'n/a']);
  });
});

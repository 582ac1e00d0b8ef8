import { describe, expect, it } from 'vitest';
import { type BenchResult, ratiosAndTargets, tenantMixTargets } from './report.js';

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

describe("issue 31's targets", () => {
  const flat = (targetEventsPerSec: number, cpuPerMillion: Record<string, number>) =>
    ({ targetEventsPerSec, verdict: { flat: true }, cpuPerMillion, latency202Ms: {} }) as unknown as NonNullable<BenchResult['search']>['steps'][number];
  const withRun = (o: { rate: number; cpu: Record<string, number>; freshnessP99: number; send202P99: number; soakHeld?: boolean }): BenchResult => {
    const r = result();
    r.search = { steps: [flat(o.rate, o.cpu)], sustainableEventsPerSec: o.rate } as unknown as BenchResult['search'];
    r.freshness = {
      achievedEventsPerSec: o.rate / 2,
      probes: { sent: 10, accepted: 10, seen: 10, missing: 0, failed: 0 },
      latencyMs: { p99: o.freshnessP99 },
      load202Ms: { p99: o.send202P99 },
    } as unknown as BenchResult['freshness'];
    if (o.soakHeld !== undefined) {
      r.soak = {
        targetEventsPerSec: o.rate,
        seconds: 600,
        achievedEventsPerSec: o.rate,
        readings: [],
        series: [],
        verdict: { ok: true, problems: [] },
        lag: { flat: o.soakHeld, reason: o.soakHeld ? 'backlog +1,000 events (trend)' : 'backlog grew by 2,000,000 events (trend)' },
      } as unknown as BenchResult['soak'];
    }
    ratiosAndTargets(r);
    return r;
  };
  const ISSUE_31 = /^(end to end|gateway <=|processor <=|Redis <=|freshness|send -> 202)/;
  const verdicts = (r: BenchResult) => Object.fromEntries(r.targets.filter((t) => ISSUE_31.test(t.name)).map((t) => [t.name, t.verdict]));

  it('judges end to end, CPU per 1M events by process, and the freshness and 202 tails at half load', () => {
    const meeting = withRun({ rate: 32_000, cpu: { gateway: 9.5, processor: 12, redis: 2.4 }, freshnessP99: 950, send202P99: 48 });
    expect(verdicts(meeting)).toEqual({
      'end to end (lag flat) >= 32,000 events/s': 'pass',
      'gateway <= 10.0 CPU s/1M events (flat)': 'pass',
      'processor <= 12.0 CPU s/1M events (flat)': 'pass',
      'Redis <= 2.5 CPU s/1M events (flat)': 'pass',
      'freshness p99 <= 1.0 s at half load': 'pass',
      'send -> 202 p99 <= 50 ms at half load': 'pass',
    });
    // This machine on 2026-11-29: far from each.
    const today = withRun({ rate: 19_700, cpu: { gateway: 19.5, processor: 24.7, redis: 5.4 }, freshnessP99: 1_213, send202P99: 170 });
    expect(Object.values(verdicts(today))).toEqual(Array(6).fill('FAIL'));
  });

  it('does not count a flat rate that the soak could not hold', () => {
    const held = withRun({ rate: 33_000, cpu: { gateway: 9, processor: 11, redis: 2 }, freshnessP99: 900, send202P99: 40, soakHeld: true });
    const endToEnd = (r: BenchResult) => r.targets.find((t) => t.name.startsWith('end to end'));
    expect(endToEnd(held)).toMatchObject({ verdict: 'pass', note: expect.stringContaining('held 10 min in the soak') });
    const notHeld = withRun({ rate: 33_000, cpu: { gateway: 9, processor: 11, redis: 2 }, freshnessP99: 900, send202P99: 40, soakHeld: false });
    expect(endToEnd(notHeld)).toMatchObject({
      verdict: 'FAIL',
      note: expect.stringContaining('NOT held in the soak (backlog grew by 2,000,000 events (trend))'),
    });
  });
});

describe("the tenant mix's target", () => {
  const mix = (cpu: Record<string, number> | undefined): BenchResult => {
    const r = result();
    if (cpu) {
      r.search = {
        steps: [{ targetEventsPerSec: 14_000, verdict: { flat: true }, cpuPerMillion: cpu, latency202Ms: {} }],
        sustainableEventsPerSec: 14_000,
      } as unknown as BenchResult['search'];
    }
    tenantMixTargets(r);
    return r;
  };

  it('judges gateway + processor + Redis at the flat rate against 60% of the recorded baseline (70.3)', () => {
    expect(mix({ gateway: 18, processor: 20, redis: 4.1 }).targets).toEqual([
      expect.objectContaining({
        name: expect.stringContaining('<= 42.2 CPU s/1M events'),
        verdict: 'pass',
        measured: expect.stringContaining('42.1 (18.0 + 20.0 + 4.1)'),
      }),
    ]);
    // The run of 2026-11-29 13:23: 36.3 + 37.9 + 11.5.
    expect(mix({ gateway: 36.3, processor: 37.9, redis: 11.5 }).targets).toEqual([
      expect.objectContaining({ verdict: 'FAIL', measured: expect.stringContaining('122% of the baseline') }),
    ]);
    expect(mix(undefined).targets).toEqual([expect.objectContaining({ verdict: 'n/a' })]);
  });
});

import { describe, expect, it } from 'vitest';
import { compareWithRecorded, formatGuard, median, type RecordedRuns } from './regression-guard.js';

const recorded = (values: Record<string, number>[]): RecordedRuns => ({
  profile: 'tenants',
  machine: '2 cores',
  runs: values.map((figures, i) => ({ startedAt: `2026-11-28T18:0${i}:00Z`, commit: 'abc1234', figures })),
});

const movementOf = (now: Record<string, number>, runs: RecordedRuns, key: string) => compareWithRecorded(now, runs).find((l) => l.key === key)?.movement;

describe('the regression guard', () => {
  const runs = recorded([
    { endToEnd: 20_000, p99Unpaced: 100, cpuGatewayFlat: 18 },
    { endToEnd: 22_000, p99Unpaced: 140, cpuGatewayFlat: 19 },
    { endToEnd: 21_000, p99Unpaced: 120, cpuGatewayFlat: 18.5 },
  ]);

  it('calls a figure within the recorded range widened by half its spread unmoved', () => {
    // Range 20,000..22,000, spread 2,000: unmoved from 19,000 to 23,000.
    expect(movementOf({ endToEnd: 19_100 }, runs, 'endToEnd')).toBe('within');
    expect(movementOf({ endToEnd: 22_900 }, runs, 'endToEnd')).toBe('within');
    expect(movementOf({ endToEnd: 23_100 }, runs, 'endToEnd')).toBe('better');
    expect(movementOf({ endToEnd: 18_900 }, runs, 'endToEnd')).toBe('worse');
  });

  it('knows which way is better: a higher latency or CPU is worse', () => {
    expect(movementOf({ p99Unpaced: 170 }, runs, 'p99Unpaced')).toBe('worse');
    expect(movementOf({ p99Unpaced: 70 }, runs, 'p99Unpaced')).toBe('better');
    // Spread 1 s of CPU but at least 5% of the median (0.925 s) either way.
    expect(movementOf({ cpuGatewayFlat: 19.4 }, runs, 'cpuGatewayFlat')).toBe('within');
    expect(movementOf({ cpuGatewayFlat: 15 }, runs, 'cpuGatewayFlat')).toBe('better');
  });

  it('widens identical runs by 5% of their median', () => {
    const same = recorded([{ endToEnd: 10_000 }, { endToEnd: 10_000 }]);
    expect(movementOf({ endToEnd: 10_400 }, same, 'endToEnd')).toBe('within');
    expect(movementOf({ endToEnd: 9_400 }, same, 'endToEnd')).toBe('worse');
  });

  it('says what was not measured now and what was never recorded', () => {
    expect(movementOf({}, runs, 'endToEnd')).toBe('not measured');
    expect(movementOf({ writerPercent: 60 }, runs, 'writerPercent')).toBe('not recorded');
  });

  it('prints the moved figures by name, and leaves out those neither recorded nor measured', () => {
    const lines = compareWithRecorded({ endToEnd: 30_000, p99Unpaced: 200 }, runs);
    const text = formatGuard(lines, runs).join('\n');
    expect(text).toContain("moved beyond the recorded runs' spread: end to end, lag flat better; send -> 202 p99, unpaced WORSE");
    expect(text).not.toContain('writer alone');
    expect(formatGuard(compareWithRecorded({ endToEnd: 21_000 }, runs), runs).join('\n')).toContain('no figure moved');
  });

  it('takes the median of an even count as the mean of the middle two', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([5, 1, 3])).toBe(3);
  });
});

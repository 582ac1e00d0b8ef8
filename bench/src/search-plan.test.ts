import { describe, expect, it } from 'vitest';
import { firstRate, judgeWindow, nextRate, record, type SearchBounds, trendPerSecond } from './search-plan.js';

const bounds: SearchBounds = { maxRate: 20_000, step: 100, resolution: 0.05 };

describe('judgeWindow', () => {
  const window = { seconds: 20, targetEventsPerSec: 10_000, accepted: 200_000, backlogStart: 5_000 };

  it('calls a backlog that grew by less than a second of load flat', () => {
    const v = judgeWindow({ ...window, backlogEnd: 5_000 + 9_000 });
    expect(v.flat).toBe(true);
    expect(v.growth).toBe(9_000);
    expect(v.allowed).toBe(10_000);
  });

  it('calls a backlog that grew by more than 2% of the window and a second of load not flat', () => {
    const v = judgeWindow({ ...window, backlogEnd: 5_000 + 10_001 });
    expect(v.flat).toBe(false);
    expect(v.reason).toContain('backlog grew');
  });

  it('allows 2% of the events when that is more than a second of load', () => {
    const long = { ...window, seconds: 100, accepted: 1_000_000 };
    expect(judgeWindow({ ...long, backlogEnd: 5_000 + 19_000 }).flat).toBe(true);
    expect(judgeWindow({ ...long, backlogEnd: 5_000 + 21_000 }).flat).toBe(false);
  });

  it('judges whether the rate was offered on the events answered when given (refusals are answers)', () => {
    // 10% of the events refused (402/429): accepted 9,000/s of 10,000, but every one answered.
    const refused = { ...window, accepted: 180_000, backlogEnd: 5_000 };
    expect(judgeWindow(refused).flat).toBe(false);
    expect(judgeWindow(refused).reason).toContain('accepted only 9000');
    expect(judgeWindow({ ...refused, answered: 200_000 }).flat).toBe(true);
    const slow = judgeWindow({ ...refused, answered: 180_000 });
    expect(slow.flat).toBe(false);
    expect(slow.reason).toContain('answered only 9000');
  });

  it('calls a shrinking backlog flat', () => {
    expect(judgeWindow({ ...window, backlogEnd: 0 }).flat).toBe(true);
  });

  it('judges the trend over samples, not two readings an insert apart', () => {
    // Backlog steady at ~5,000 with a 10,000-row insert landing every second: the readings saw-tooth.
    const steady = Array.from({ length: 21 }, (_, i) => ({ atMs: i * 1000 + 500, backlog: 5_000 + (i % 2 === 0 ? 4_000 : -4_000) }));
    const v = judgeWindow({ ...window, backlogEnd: 5_000 + 9_500, samples: steady });
    expect(v.flat).toBe(true);
    expect(v.endpointGrowth).toBe(9_500);
    expect(Math.abs(v.growth)).toBeLessThan(1_000);
    // Growing by 800 events/s (8% of the rate): 16,000 over 20 s, above half a second of load.
    const growing = Array.from({ length: 21 }, (_, i) => ({ atMs: i * 1000, backlog: 5_000 + 800 * i + (i % 2 === 0 ? 4_000 : -4_000) }));
    const g = judgeWindow({ ...window, backlogEnd: 5_000, samples: growing });
    expect(g.flat).toBe(false);
    expect(g.reason).toContain('trend');
  });

  it('is not flat when the gateway did not accept the paced rate', () => {
    const v = judgeWindow({ ...window, accepted: 180_000, backlogEnd: 5_000 });
    expect(v.flat).toBe(false);
    expect(v.achievedEventsPerSec).toBe(9_000);
    expect(v.reason).toContain('accepted only');
  });
});

describe('trendPerSecond', () => {
  it('is the slope of a straight line in events per second', () => {
    expect(trendPerSecond([0, 1, 2, 3].map((i) => ({ atMs: i * 500, backlog: 100 + 50 * i })))).toBeCloseTo(100);
  });

  it('is 0 for readings at one moment', () => {
    expect(
      trendPerSecond([
        { atMs: 1, backlog: 5 },
        { atMs: 1, backlog: 9 },
      ]),
    ).toBe(0);
  });
});

describe('the rate search', () => {
  it('starts 20% above the unpaced end-to-end rate, capped by the accept capacity', () => {
    expect(firstRate(10_000, bounds)).toBe(12_000);
    expect(firstRate(19_000, bounds)).toBe(20_000);
  });

  it('goes down by 30% while nothing kept up, up by 25% while everything did', () => {
    expect(nextRate(record({}, 12_000, false), bounds)).toBe(8_400);
    expect(nextRate(record({}, 12_000, true), bounds)).toBe(15_000);
  });

  it('stops going up at the highest rate allowed, and for a step smaller than the resolution', () => {
    expect(nextRate(record({}, 18_000, true), bounds)).toBe(20_000);
    expect(nextRate(record({}, 20_000, true), bounds)).toBeUndefined();
    expect(nextRate(record({}, 19_500, true), bounds)).toBeUndefined();
  });

  it('bisects a bracket and stops when it is narrower than the resolution', () => {
    let state = record(record({}, 12_000, false), 8_400, true);
    expect(nextRate(state, bounds)).toBe(10_200);
    state = record(state, 10_200, true);
    expect(nextRate(state, bounds)).toBe(11_100);
    state = record(state, 11_100, true);
    expect(nextRate(state, bounds)).toBe(11_600);
    state = record(state, 11_600, false);
    expect(state).toEqual({ highestFlat: 11_100, lowestNotFlat: 11_600 });
    expect(nextRate(state, bounds)).toBeUndefined();
  });

  it('has nothing to try before the first verdict', () => {
    expect(nextRate({}, bounds)).toBeUndefined();
  });
});

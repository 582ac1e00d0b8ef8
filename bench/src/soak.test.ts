import { describe, expect, it } from 'vitest';
import { judgeSoak, slope, soakLag, type SoakReading, soakSeries } from './soak.js';

/** Readings every 20 s over 600 s; `rss` and `redis` give each series' value at a time. */
function readings(o: { gateway: (s: number) => number; processor?: (s: number) => number; besidesSeen?: (s: number) => number }): SoakReading[] {
  return Array.from({ length: 31 }, (_, i) => {
    const atS = i * 20;
    return {
      atS,
      eventsAccepted: atS * 10_000,
      rssMb: { gateway: o.gateway(atS), processor: (o.processor ?? (() => 500))(atS) },
      redisUsedMb: 10 + atS,
      redisSeenIdsMb: atS,
      redisBesidesSeenIdsMb: (o.besidesSeen ?? (() => 10))(atS),
      lag: { dedupe: 0, storage: 0 },
    };
  });
}

const named = (series: ReturnType<typeof soakSeries>, name: string) => series.find((s) => s.name.startsWith(name));

describe('the soak', () => {
  it('fits a least-squares slope', () => {
    expect(
      slope([
        { x: 0, y: 1 },
        { x: 1, y: 3 },
        { x: 2, y: 5 },
      ]),
    ).toBeCloseTo(2);
    expect(slope([{ x: 1, y: 3 }])).toBeUndefined();
    expect(
      slope([
        { x: 1, y: 3 },
        { x: 1, y: 4 },
      ]),
    ).toBeUndefined();
  });

  it('passes RSS that swings by its young generation from one reading to the next but does not trend up', () => {
    // ±60 MB alternating: two single readings could differ by 120 MB, the trend does not.
    const series = soakSeries(readings({ gateway: (s) => 400 + ((s / 20) % 2 === 0 ? 60 : -60) }));
    const gateway = named(series, 'gateway');
    expect(Math.abs((gateway?.endMb ?? 0) - (gateway?.middleMb ?? 0))).toBe(120);
    expect(gateway?.trendMb).toBeLessThan(25);
    expect(judgeSoak(series, 10_000, 10_000)).toEqual({ ok: true, problems: [] });
  });

  it('fails a process whose RSS grows steadily, naming it and the growth', () => {
    // 0.3 MB/s: 90 MB over the second half, above max(50 MB, 10% of ~590 MB).
    const series = soakSeries(readings({ gateway: () => 400, processor: (s) => 500 + 0.3 * s }));
    expect(named(series, 'processor')?.trendMb).toBeCloseTo(90, 0);
    const verdict = judgeSoak(series, 10_000, 10_000);
    expect(verdict.ok).toBe(false);
    expect(verdict.problems).toEqual([expect.stringMatching(/^processor RSS grew 90 MB over the second half \(trend; allowed 59\)$/)]);
  });

  it('judges Redis besides the seen ids, which grow by design, and catches growth there', () => {
    const byDesign = soakSeries(readings({ gateway: () => 400 }));
    expect(named(byDesign, 'Redis')?.trendMb).toBeCloseTo(0);
    expect(judgeSoak(byDesign, 10_000, 10_000).ok).toBe(true);
    // 0.05 MB/s besides the seen ids: 15 MB over the second half, above max(10 MB, 10% of ~25 MB).
    const leaking = soakSeries(readings({ gateway: () => 400, besidesSeen: (s) => 10 + 0.05 * s }));
    expect(judgeSoak(leaking, 10_000, 10_000).problems).toEqual([expect.stringMatching(/^Redis besides the seen ids grew 15 MB/)]);
  });

  it('fails when the gateway did not accept the rate asked for, or when a series has no readings', () => {
    const series = soakSeries(readings({ gateway: () => 400 }));
    expect(judgeSoak(series, 9_000, 10_000).problems).toEqual(['the gateway accepted 9,000 events/s, below 95% of the 10,000 asked for']);
    const noRedis = soakSeries(readings({ gateway: () => 400 }).map((r) => ({ ...r, redisBesidesSeenIdsMb: undefined })));
    expect(judgeSoak(noRedis, 10_000, 10_000).problems).toEqual(['Redis besides the seen ids: too few readings in the second half']);
  });

  it('tells whether the pipeline held the rate: the lag over the whole soak, judged as a search step is', () => {
    const withLag = (lag: (s: number) => number) => readings({ gateway: () => 400 }).map((r) => ({ ...r, lag: { dedupe: lag(r.atS), storage: 5_000 } }));
    // 600 s at 10,000 events/s: flat below max(2% of 6,000,000, 0.5 s of load) = 120,000.
    const swinging = soakLag(
      withLag((s) => 20_000 + ((s / 20) % 2 === 0 ? 15_000 : -15_000)),
      6_000_000,
      10_000,
    );
    expect(swinging).toMatchObject({ flat: true, allowed: 120_000 });
    expect(judgeSoak(soakSeries(readings({ gateway: () => 400 })), 10_000, 10_000, swinging).ok).toBe(true);
    // 3,300 events/s of lag more: 2 M over the ten minutes, as at the rate a 20 s step once called flat.
    const growing = soakLag(
      withLag((s) => 12_000 + 3_300 * s),
      6_000_000,
      10_000,
    );
    expect(growing.flat).toBe(false);
    expect(growing.growth).toBeCloseTo(1_980_000, -3);
    expect(judgeSoak(soakSeries(readings({ gateway: () => 400 })), 10_000, 10_000, growing).problems).toEqual([
      'the lag grew by 1,980,000 events over the soak (trend; flat below 120,000): the pipeline did not hold this rate',
    ]);
    // A rate the gateway did not carry is said once, as such, not again as lag.
    const notCarried = soakLag(
      withLag((s) => 12_000 + 3_300 * s),
      5_000_000,
      10_000,
    );
    expect(judgeSoak(soakSeries(readings({ gateway: () => 400 })), 8_333, 10_000, notCarried).problems).toEqual([
      'the gateway accepted 8,333 events/s, below 95% of the 10,000 asked for',
    ]);
  });
});

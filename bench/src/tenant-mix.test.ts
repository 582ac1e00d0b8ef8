import { describe, expect, it } from 'vitest';
import { buildAccountMix, countByPlan, createSizeSampler, createZipfSampler, describeSizeMix, parseSizeMix, seededRandom, zipfShares } from './tenant-mix.js';

/** The element, or a failed test when it is missing. */
function at<T>(items: T[], i: number): T {
  const item = items[i];
  if (item === undefined) throw new Error(`no element ${i} of ${items.length}`);
  return item;
}

function find<T>(items: T[], pick: (item: T) => boolean): T {
  const item = items.find(pick);
  if (item === undefined) throw new Error('no element matches');
  return item;
}

describe('zipf sampler', () => {
  it('gives rank k a share of 1/k^s', () => {
    const shares = zipfShares(1_000, 1);
    const harmonic = Array.from({ length: 1_000 }, (_, i) => 1 / (i + 1)).reduce((a, b) => a + b, 0);
    expect(shares.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
    expect(shares[0]).toBeCloseTo(1 / harmonic, 12);
    expect(shares[9]).toBeCloseTo(at(shares, 0) / 10, 12);
  });

  it('draws ranks in those shares, the same ones for the same seed', () => {
    const shares = zipfShares(1_000, 1);
    const draw = createZipfSampler(shares, seededRandom(42));
    const counts = new Array<number>(1_000).fill(0);
    const n = 200_000;
    const first: number[] = [];
    for (let i = 0; i < n; i++) {
      const rank = draw();
      counts[rank] = at(counts, rank) + 1;
      if (i < 20) first.push(rank);
    }
    // Rank 1 carries 13.4% of the traffic; the top 10 about 39%; the tail of 900 about 31%.
    expect(at(counts, 0) / n).toBeCloseTo(at(shares, 0), 2);
    const top10 = counts.slice(0, 10).reduce((a, b) => a + b, 0) / n;
    expect(top10).toBeCloseTo(
      shares.slice(0, 10).reduce((a, b) => a + b, 0),
      2,
    );
    const tail = counts.slice(100).reduce((a, b) => a + b, 0) / n;
    expect(tail).toBeCloseTo(
      shares.slice(100).reduce((a, b) => a + b, 0),
      2,
    );
    expect(Math.min(...first)).toBeGreaterThanOrEqual(0);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(n);

    const again = createZipfSampler(shares, seededRandom(42));
    expect(Array.from({ length: 20 }, () => again())).toEqual(first);
    const other = createZipfSampler(shares, seededRandom(43));
    expect(Array.from({ length: 20 }, () => other())).not.toEqual(first);
  });
});

describe('account mix', () => {
  it('puts the tail on free, a band on pro and the head on growth, each allowance covering its share of the budget', () => {
    const mix = buildAccountMix({ accounts: 2_000, s: 1, budgetEvents: 3_000_000 });
    expect(mix).toHaveLength(2_000);
    expect(mix.map((a) => a.rank)).toEqual(Array.from({ length: 2_000 }, (_, i) => i + 1));
    const plans = countByPlan(mix);
    expect(plans.free.accounts).toBeGreaterThan(1_000);
    expect(plans.growth.accounts).toBeGreaterThan(0);
    expect(plans.growth.accounts).toBeLessThan(plans.pro.accounts);
    expect(plans.free.accounts + plans.pro.accounts + plans.growth.accounts).toBe(2_000);
    // Bands in rank order: growth, then pro, then free.
    const order = mix.map((a) => a.plan).filter((p, i, all) => i === 0 || all[i - 1] !== p);
    expect(order).toEqual(['growth', 'pro', 'free']);
    const limits = { free: 1_000, pro: 50_000, growth: 500_000 };
    for (const a of mix) expect(a.expectedEvents).toBeLessThanOrEqual(limits[a.plan]);
    // The cheapest plan that covers it: the account just above each band would not fit in it.
    const firstPro = find(mix, (a) => a.plan === 'pro');
    expect(at(mix, firstPro.rank - 2).expectedEvents).toBeGreaterThan(limits.pro);
    const firstFree = find(mix, (a) => a.plan === 'free');
    expect(at(mix, firstFree.rank - 2).expectedEvents).toBeGreaterThan(limits.free);
  });

  it('leaves an account beyond the largest plan on it (its allowance binds)', () => {
    const mix = buildAccountMix({ accounts: 10, s: 1, budgetEvents: 10_000_000 });
    expect(at(mix, 0).plan).toBe('growth');
    expect(at(mix, 0).expectedEvents).toBeGreaterThan(500_000);
  });
});

describe('request sizes', () => {
  it('parses, describes and samples the mix', () => {
    const mix = parseSizeMix('1:40,10:30,100:30');
    const d = describeSizeMix(mix);
    expect(d.meanEvents).toBeCloseTo(33.4, 9);
    expect(d.eventShare[100]).toBeCloseTo(30 / 33.4, 9);
    const draw = createSizeSampler(mix, seededRandom(7));
    const seen: Record<number, number> = {};
    for (let i = 0; i < 30_000; i++) {
      const n = draw();
      seen[n] = (seen[n] ?? 0) + 1;
    }
    expect(
      Object.keys(seen)
        .map(Number)
        .sort((a, b) => a - b),
    ).toEqual([1, 10, 100]);
    expect((seen[1] ?? 0) / 30_000).toBeCloseTo(0.4, 1);
    expect(() => parseSizeMix('1:40,101:3')).toThrow(/101:3/);
    expect(() => parseSizeMix('x')).toThrow(/e\.g\./);
  });
});

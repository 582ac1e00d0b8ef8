/**
 * The tenant mix of `npm run bench:tenants`, kept pure so it can be tested: which account sends
 * a request (a Zipf share of the traffic), how many events it carries, and which plan each
 * account is on. Everything draws from one seeded generator, so a seed gives the same run of
 * choices (the event ids themselves are random, as an SDK's are).
 */
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { PLAN_LIMITS, type Plan } from '@ingest/domain';

/** A source of floats in [0, 1). */
export type Random = () => number;

export function seededRandom(seed: number): Random {
  const rng = xoroshiro128plus(seed);
  return () => uniformFloat64(rng);
}

/** Share of the traffic of each rank (rank 1 first): 1/k^s, normalised to sum to 1. */
export function zipfShares(n: number, s: number): number[] {
  if (!Number.isInteger(n) || n < 1) throw new Error(`zipf: n must be a positive integer, got ${n}`);
  const weights = Array.from({ length: n }, (_, i) => 1 / (i + 1) ** s);
  const total = weights.reduce((a, w) => a + w, 0);
  return weights.map((w) => w / total);
}

/** Draws 0-based ranks with the given shares (binary search over the cumulative shares). */
export function createZipfSampler(shares: number[], random: Random): () => number {
  const cumulative: number[] = [];
  let acc = 0;
  for (const s of shares) cumulative.push((acc += s));
  return () => {
    const u = random() * acc;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((cumulative[mid] ?? Infinity) > u) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
}

export interface MixAccount {
  /** 1 = the busiest. */
  rank: number;
  share: number;
  plan: Plan;
  /** The events the run's budget gives this account (share x budget). */
  expectedEvents: number;
}

/** Cheapest first: an account gets the first plan whose allowance covers its expected events. */
const PLANS_BY_SIZE: Plan[] = (Object.keys(PLAN_LIMITS) as Plan[]).sort((a, b) => PLAN_LIMITS[a] - PLAN_LIMITS[b]);

/**
 * The accounts of the mix: rank k has share 1/k^s of the traffic, and is on the smallest plan
 * whose monthly allowance covers its share of `budgetEvents` (the events the run is sized for).
 * So the long tail sits on the free plan, a band above it on pro and the head on growth, as
 * customers choose plans by what they send. A run sending more than its budget spends the
 * allowances of the accounts at the top of each band first (402), as a month would.
 */
export function buildAccountMix(o: { accounts: number; s: number; budgetEvents: number }): MixAccount[] {
  const largest = PLANS_BY_SIZE.at(-1) ?? 'growth';
  return zipfShares(o.accounts, o.s).map((share, i) => {
    const expectedEvents = share * o.budgetEvents;
    const plan = PLANS_BY_SIZE.find((p) => PLAN_LIMITS[p] >= expectedEvents) ?? largest;
    return { rank: i + 1, share, plan, expectedEvents };
  });
}

export function countByPlan(mix: MixAccount[]): Record<Plan, { accounts: number; share: number }> {
  const out = Object.fromEntries(PLANS_BY_SIZE.map((p) => [p, { accounts: 0, share: 0 }])) as Record<Plan, { accounts: number; share: number }>;
  for (const a of mix) {
    out[a.plan].accounts++;
    out[a.plan].share += a.share;
  }
  return out;
}

/** Events per request and the share of requests of that size, e.g. "1:40,10:30,100:30". */
export interface SizeMix {
  sizes: { events: number; weight: number }[];
}

export function parseSizeMix(text: string): SizeMix {
  const sizes = text.split(',').map((part) => {
    const m = /^\s*(\d+)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(part);
    const events = Number(m?.[1]);
    const weight = Number(m?.[2]);
    if (!m || events < 1 || events > 100 || !(weight > 0)) {
      throw new Error(`request sizes: "${part}" is not <events 1-100>:<weight > 0> (e.g. 1:40,10:30,100:30)`);
    }
    return { events, weight };
  });
  return { sizes };
}

export function createSizeSampler(mix: SizeMix, random: Random): () => number {
  const sampleIndex = createZipfSampler(
    mix.sizes.map((s) => s.weight),
    random,
  );
  return () => mix.sizes[sampleIndex()]?.events ?? 1;
}

/** Mean events per request, and the share of events that travel in requests of each size. */
export function describeSizeMix(mix: SizeMix): { meanEvents: number; eventShare: Record<number, number> } {
  const total = mix.sizes.reduce((a, s) => a + s.weight, 0);
  const meanEvents = mix.sizes.reduce((a, s) => a + (s.events * s.weight) / total, 0);
  const eventShare: Record<number, number> = {};
  for (const s of mix.sizes) eventShare[s.events] = (eventShare[s.events] ?? 0) + (s.events * s.weight) / total / meanEvents;
  return { meanEvents, eventShare };
}

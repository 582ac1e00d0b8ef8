/**
 * The arithmetic of the per-account ceilings (requests/s and events/s): GCRA, the generic cell
 * rate algorithm, i.e. a token bucket kept as one number per ceiling, its "theoretical arrival
 * time" (TAT). The bucket holds `rate × burstSeconds` units and refills at `rate` a second:
 * an idle account may spend the whole bucket at once (the burst), then `rate` a second.
 *
 * This module is the reference: account-rate.script.ts runs the same steps in Redis, atomically
 * for both ceilings (the integration test feeds both the same sequence and compares). Times are
 * integer microseconds so a TAT survives Redis's string round trip exactly.
 */

export const ACCOUNT_RATE_POLICIES = ['account_requests', 'account_events'] as const;
export type AccountRatePolicyName = (typeof ACCOUNT_RATE_POLICIES)[number];

export interface RatePolicy {
  name: AccountRatePolicyName;
  /** Units (requests or events) a second, sustained. */
  ratePerSecond: number;
  /** The bucket holds this many seconds of `ratePerSecond`: the burst an idle account may send at once. */
  burstSeconds: number;
}

/** The bucket's size in units: the `q` of the RateLimit-Policy header. */
export function capacityOf(policy: RatePolicy): number {
  return policy.ratePerSecond * policy.burstSeconds;
}

/** Microseconds one unit takes to refill, and the bucket's depth in microseconds. */
export function gcraParams(policy: RatePolicy): { intervalUs: number; toleranceUs: number } {
  const intervalUs = Math.ceil(1_000_000 / policy.ratePerSecond);
  // A whole number of intervals, so the bucket holds exactly `capacityOf` units whatever the rate.
  return { intervalUs, toleranceUs: capacityOf(policy) * intervalUs };
}

export interface CeilingState {
  /** Units that could be spent right now (after this request, when it was admitted). */
  remaining: number;
  /** Microseconds until the bucket is full again. */
  resetUs: number;
}

export interface Admission {
  allowed: boolean;
  /** Index of the ceiling that refused (the one with the longest wait); -1 when admitted. */
  hit: number;
  /** When a refused request would be admitted (0 when admitted). */
  retryAfterUs: number;
  /** The TATs to store: the new ones when admitted, the old ones (unchanged) when refused. */
  tats: number[];
  states: CeilingState[];
}

/**
 * One request against every ceiling at once: admitted only if every ceiling admits it, and then
 * charged to every ceiling; a refused request is charged nothing (a caller that waits
 * `retryAfter` gets through).
 *
 * A request larger than a whole bucket (a 10,000-event bulk on a 2,000-event bucket) could never
 * fit; it is admitted when its bucket is full, and the bucket then owes the rest: the account
 * waits `cost / rate` seconds before its next one, so the sustained rate still holds.
 */
export function admit(
  storedTats: readonly (number | undefined)[],
  nowUs: number,
  costs: readonly number[],
  params: readonly { intervalUs: number; toleranceUs: number }[],
): Admission {
  const bases = params.map((_, i) => Math.max(storedTats[i] ?? nowUs, nowUs));
  const next = params.map((p, i) => (bases[i] ?? nowUs) + (costs[i] ?? 0) * p.intervalUs);
  const waits = params.map((p, i) => {
    const cost = costs[i] ?? 0;
    const base = bases[i] ?? nowUs;
    const after = next[i] ?? nowUs;
    if (cost === 0 || after - nowUs <= p.toleranceUs || base === nowUs) return 0;
    // Larger than the bucket: wait until it is full; otherwise until enough has refilled.
    return cost * p.intervalUs > p.toleranceUs ? base - nowUs : after - p.toleranceUs - nowUs;
  });
  const retryAfterUs = Math.max(0, ...waits);
  const allowed = retryAfterUs === 0;
  const tats = allowed ? next : bases;
  return {
    allowed,
    hit: allowed ? -1 : waits.indexOf(retryAfterUs),
    retryAfterUs,
    tats,
    states: params.map((p, i) => {
      const owed = (tats[i] ?? nowUs) - nowUs;
      return { remaining: Math.max(0, Math.floor((p.toleranceUs - owed) / p.intervalUs)), resetUs: owed };
    }),
  };
}

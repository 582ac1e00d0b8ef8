/**
 * The decisions of the paced search (search.ts), kept pure so they can be tested: whether one
 * paced window kept up ("lag flat") and which rate to try next.
 */

export interface WindowCounts {
  seconds: number;
  /** The rate the load generator was paced to. */
  targetEventsPerSec: number;
  /** Events the gateway accepted during the window. */
  accepted: number;
  /**
   * Events the gateway answered (accepted or refused with a 4xx). When given, whether the rate
   * was offered is judged on these: a refusal (402, 429) was offered and answered.
   */
  answered?: number;
  /** Accepted minus stored (rows in ClickHouse) at the window's start and end. */
  backlogStart: number;
  backlogEnd: number;
  /**
   * Backlog readings through the window (about one a second). Rows land in inserts of up to
   * 10,000, so two single readings differ by up to an insert's worth from timing alone; the
   * least-squares trend over all readings is what is judged when there are at least 5.
   */
  samples?: { atMs: number; backlog: number }[];
}

export interface FlatVerdict {
  flat: boolean;
  /** Backlog growth over the window, events (negative: it shrank): the trend when there are samples, else end minus start. */
  growth: number;
  /** End minus start, for comparison. */
  endpointGrowth: number;
  /** The largest growth still called flat. */
  allowed: number;
  /** Accepted events/s over the window. */
  achievedEventsPerSec: number;
  reason: string;
}

/** Share of the target rate the gateway must accept: below it the offered rate was not offered. */
export const MIN_ACHIEVED_SHARE = 0.95;

/**
 * Lag is flat when the backlog grew by less than 2% of the events accepted in the window or
 * less than `allowanceS` seconds' worth of the target rate, whichever is larger. Without samples
 * the allowance is one second (rows arrive in inserts up to a second apart, so two readings
 * differ by that much from timing alone); the trend over samples is steadier, so half a second.
 * A window in which the gateway accepted less than 95% of the paced rate did not carry that rate
 * and is not flat.
 */
export function judgeWindow(w: WindowCounts): FlatVerdict {
  const endpointGrowth = w.backlogEnd - w.backlogStart;
  const slope = w.samples && w.samples.length >= 5 ? trendPerSecond(w.samples) : undefined;
  const growth = slope === undefined ? endpointGrowth : slope * w.seconds;
  const allowanceS = slope === undefined ? 1 : 0.5;
  const allowed = Math.max(0.02 * w.accepted, allowanceS * w.targetEventsPerSec);
  const achievedEventsPerSec = w.seconds > 0 ? w.accepted / w.seconds : 0;
  const offeredPerSec = w.answered === undefined ? achievedEventsPerSec : w.seconds > 0 ? w.answered / w.seconds : 0;
  if (offeredPerSec < MIN_ACHIEVED_SHARE * w.targetEventsPerSec) {
    const what = w.answered === undefined ? 'accepted' : 'answered';
    return { flat: false, growth, endpointGrowth, allowed, achievedEventsPerSec, reason: `gateway ${what} only ${Math.round(offeredPerSec)} events/s` };
  }
  const how = slope === undefined ? 'end - start' : 'trend';
  if (growth >= allowed)
    return { flat: false, growth, endpointGrowth, allowed, achievedEventsPerSec, reason: `backlog grew by ${Math.round(growth)} events (${how})` };
  return {
    flat: true,
    growth,
    endpointGrowth,
    allowed,
    achievedEventsPerSec,
    reason: `backlog ${growth >= 0 ? '+' : ''}${Math.round(growth)} events (${how})`,
  };
}

/** Least-squares slope of backlog over time, events per second. */
export function trendPerSecond(samples: { atMs: number; backlog: number }[]): number {
  const n = samples.length;
  const meanT = samples.reduce((a, s) => a + s.atMs, 0) / n;
  const meanB = samples.reduce((a, s) => a + s.backlog, 0) / n;
  let num = 0;
  let den = 0;
  for (const s of samples) {
    num += (s.atMs - meanT) * (s.backlog - meanB);
    den += (s.atMs - meanT) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 1000;
}

export interface SearchState {
  /** Highest rate judged flat so far. */
  highestFlat?: number;
  /** Lowest rate judged not flat so far. */
  lowestNotFlat?: number;
}

export interface SearchBounds {
  /** Rates above this are not tried (a margin above the gateway's unpaced accept rate). */
  maxRate: number;
  /** Rates are rounded to this (one request's events). */
  step: number;
  /** Stop when the bracket is narrower than this share of its upper end. */
  resolution: number;
}

/** The rate the first step tries: 20% above the unpaced end-to-end rate, at most `maxRate`. */
export function firstRate(unpacedEndToEnd: number, bounds: SearchBounds): number {
  return roundTo(Math.min(unpacedEndToEnd * 1.2, bounds.maxRate), bounds.step);
}

/** Adds one window's verdict to the search state. */
export function record(state: SearchState, rate: number, flat: boolean): SearchState {
  if (flat) return { ...state, highestFlat: Math.max(state.highestFlat ?? 0, rate) };
  return { ...state, lowestNotFlat: Math.min(state.lowestNotFlat ?? Infinity, rate) };
}

/**
 * Next rate to try, or undefined when the search is done: up by 25% while every rate kept up
 * (until `maxRate`, and not by less than `resolution`), down by 30% while none did, then bisect
 * the bracket until it is narrower than `resolution`.
 */
export function nextRate(state: SearchState, bounds: SearchBounds): number | undefined {
  const { highestFlat: lo, lowestNotFlat: hi } = state;
  let next: number;
  if (lo === undefined && hi === undefined) return undefined;
  if (hi === undefined) {
    if (lo === undefined) return undefined;
    next = Math.min(lo * 1.25, bounds.maxRate);
    if (next - lo < bounds.resolution * lo) return undefined;
  } else if (lo === undefined) {
    next = hi * 0.7;
  } else {
    if (hi - lo <= bounds.resolution * hi) return undefined;
    next = (lo + hi) / 2;
  }
  const rounded = roundTo(next, bounds.step);
  if (rounded <= 0 || rounded === lo || rounded === hi) return undefined;
  return rounded;
}

function roundTo(value: number, step: number): number {
  return Math.max(step, Math.round(value / step) * step);
}

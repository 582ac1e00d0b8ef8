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
  /** Accepted minus stored (rows in ClickHouse) at the window's start and end. */
  backlogStart: number;
  backlogEnd: number;
}

export interface FlatVerdict {
  flat: boolean;
  /** Backlog growth over the window, events (negative: it shrank). */
  growth: number;
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
 * less than one second's worth of the target rate, whichever is larger (ClickHouse rows arrive
 * in inserts up to a second apart, so a second's worth is noise, not a trend). A window in which
 * the gateway accepted less than 95% of the paced rate did not carry that rate and is not flat.
 */
export function judgeWindow(w: WindowCounts): FlatVerdict {
  const growth = w.backlogEnd - w.backlogStart;
  const allowed = Math.max(0.02 * w.accepted, w.targetEventsPerSec);
  const achievedEventsPerSec = w.seconds > 0 ? w.accepted / w.seconds : 0;
  if (achievedEventsPerSec < MIN_ACHIEVED_SHARE * w.targetEventsPerSec) {
    return { flat: false, growth, allowed, achievedEventsPerSec, reason: `gateway accepted only ${Math.round(achievedEventsPerSec)} events/s` };
  }
  if (growth >= allowed) return { flat: false, growth, allowed, achievedEventsPerSec, reason: `backlog grew by ${Math.round(growth)} events` };
  return { flat: true, growth, allowed, achievedEventsPerSec, reason: `backlog ${growth >= 0 ? '+' : ''}${Math.round(growth)} events` };
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

/**
 * The first-seen marks of one partition of events.raw: key -> when the event was first
 * received. A key is a duplicate while its mark is younger than the window (7 days by default).
 * Pure and in memory; durability comes from the changelog topic it is restored from.
 */
export interface DedupeWindow {
  /** True if the key was first seen within the window before `atMs`. */
  seen(key: string, atMs: number): boolean;
  mark(key: string, firstSeenMs: number): void;
  /** Forgets marks older than the window; returns how many. */
  sweep(nowMs: number): number;
  readonly size: number;
}

export function createDedupeWindow(windowMs: number): DedupeWindow {
  const marks = new Map<string, number>();
  return {
    seen(key, atMs) {
      const first = marks.get(key);
      return first !== undefined && atMs - first < windowMs;
    },
    mark(key, firstSeenMs) {
      // Within a window the earliest mark wins, so a replayed entry never moves it forward; a
      // mark from after the window has passed starts a new window.
      const existing = marks.get(key);
      if (existing === undefined || firstSeenMs < existing || firstSeenMs - existing >= windowMs) marks.set(key, firstSeenMs);
    },
    sweep(nowMs) {
      let removed = 0;
      for (const [key, first] of marks) {
        if (nowMs - first >= windowMs) {
          marks.delete(key);
          removed++;
        }
      }
      return removed;
    },
    get size() {
      return marks.size;
    },
  };
}

/** The dedupe key of an event: accountId is `acc_` + base62, so the separator is unambiguous. */
export function dedupeKey(accountId: string, eventId: string): string {
  return `${accountId}:${eventId}`;
}

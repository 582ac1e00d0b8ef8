import { hash } from 'node:crypto';
import { rawEventKey } from '@ingest/domain';

/**
 * A dedupe key reduced to 128 bits (MD5 of `account:eventId`). Two different events share a
 * fingerprint with probability ~n²/2¹²⁹: for a billion marks about 1.5e-21, far below the odds
 * of losing an event to hardware faults. Fingerprints keep each mark at a fixed 16 bytes
 * whatever the caller's id length, which is what makes the store's memory boundable.
 *
 * Held as a string of 16 latin1 characters, one per byte of the digest (the changelog carries
 * the same 16 bytes): a digest as a Buffer costs an ArrayBuffer per event, which the garbage
 * collector tracks apart from the heap; as a string it is an ordinary young object. Fingerprint,
 * look-up and mark of a new event in a window of 20,000 marks: 1.06-1.08 µs against 1.89-1.97 µs
 * with the Buffer (300,000 keys, medians of 7, Node 24, this machine, 2026-11-29).
 */
export type Fingerprint = string;

export const FINGERPRINT_BYTES = 16;

export function fingerprint(accountId: string, eventId: string): Fingerprint {
  return fingerprintOfKey(rawEventKey(accountId, eventId));
}

/** The fingerprint of an events.raw key (which is the dedupe key: `rawEventKey`). */
export function fingerprintOfKey(key: string): Fingerprint {
  return hash('md5', key, 'binary'); // 'binary' is Node's name for latin1 in the digest types
}

/** The fingerprint's little-endian 32-bit word `i` (0-3; the window compares 0-2). */
function word(fp: Fingerprint, i: number): number {
  const at = i * 4;
  return (fp.charCodeAt(at) | (fp.charCodeAt(at + 1) << 8) | (fp.charCodeAt(at + 2) << 16) | (fp.charCodeAt(at + 3) << 24)) >>> 0;
}

/**
 * The first-seen marks of one partition of events.raw: fingerprint -> when the event was first
 * received. A key is a duplicate while its mark is younger than the window (7 days by default).
 * Pure and in memory; durability comes from the changelog topic it is restored from.
 */
export interface DedupeWindow {
  /** True if the key was first seen within the window before `atMs`. */
  seen(fp: Fingerprint, atMs: number): boolean;
  mark(fp: Fingerprint, firstSeenMs: number): void;
  /** Forgets marks older than the window; returns how many. */
  sweep(nowMs: number): number;
  readonly size: number;
  /** Bytes held by the tables (for the memory gauge). */
  readonly bytes: number;
}

export interface DedupeWindowOptions {
  /** At most this many marks are held; beyond it the oldest eighth is dropped. */
  maxMarks?: number;
  /** Told how many marks were dropped for room (for the eviction counter). */
  onEvict?: (count: number) => void;
}

/** Marks are grouped in segments of about an eighth of the window or of the capacity each. */
const SEGMENTS = 8;

/**
 * Written here rather than taken from a library: what is needed is a set of 128-bit keys with a
 * timestamp each, held in flat typed arrays (24 bytes a slot instead of ~150 for a Map entry
 * with a string key), expiring by whole segments so that neither sweeping nor eviction walks
 * single entries. No npm package found offers that without per-entry objects.
 *
 * One open-addressing table holds every mark, each slot tagged with its segment's generation;
 * a segment is only a count and a time range. Dropping the oldest segment advances the oldest
 * live generation, which turns its slots into free ones at no cost (an insert reuses them, a
 * rebuild drops them). Until 2026-11-29 each segment had a table of its own, and a new event
 * (seen(), then mark()) probed all eight twice; a probe for an absent key at the tables' load
 * reads several slots, and in production's tables (250,000 marks a segment) each read is a cache
 * miss. Seen-and-mark of a new event: see the figures in docs/benchmarks.md.
 */
export function createDedupeWindow(windowMs: number, options: DedupeWindowOptions = {}): DedupeWindow {
  const maxMarks = options.maxMarks ?? Number.POSITIVE_INFINITY;
  const segmentMaxMarks = Number.isFinite(maxMarks) ? Math.max(1, Math.ceil(maxMarks / SEGMENTS)) : Number.POSITIVE_INFINITY;
  const segmentSpanMs = Math.max(1, Math.ceil(windowMs / SEGMENTS));
  const table = new MarkTable();
  // Oldest first, generations consecutive: segments[i].generation = table.oldestLive + i.
  const segments: Segment[] = [];
  let live = 0;

  function segmentOf(slot: number): Segment {
    return segments[table.generationAt(slot) - table.oldestLive] as Segment;
  }

  function segmentFor(firstSeenMs: number): Segment {
    const last = segments.at(-1);
    if (last && last.count < segmentMaxMarks && firstSeenMs - last.minMs < segmentSpanMs) return last;
    const fresh = new Segment(table.oldestLive + segments.length, firstSeenMs);
    segments.push(fresh);
    return fresh;
  }

  function dropOldest(): number {
    const dropped = segments.shift() as Segment;
    table.oldestLive = dropped.generation + 1;
    live -= dropped.count;
    return dropped.count;
  }

  return {
    seen(fp, atMs) {
      const slot = table.find(fp);
      return slot >= 0 && atMs - table.firstSeenAt(slot) < windowMs;
    },
    mark(fp, firstSeenMs) {
      // Within a window the earliest mark wins, so a replayed entry never moves it forward; a
      // mark from after the window has passed starts a new window.
      const slot = table.find(fp);
      if (slot >= 0) {
        const existing = table.firstSeenAt(slot);
        if (firstSeenMs < existing || firstSeenMs - existing >= windowMs) {
          table.setFirstSeen(slot, firstSeenMs);
          segmentOf(slot).widen(firstSeenMs);
        }
        return;
      }
      const segment = segmentFor(firstSeenMs);
      table.insert(fp, firstSeenMs, segment.generation, live + 1);
      segment.count++;
      segment.widen(firstSeenMs);
      live++;
      while (segments.length > 1 && live > maxMarks) {
        // Not inside the optional call: without onEvict its argument is never evaluated, and
        // this loop spun for ever (the bound held only because every caller passed onEvict).
        const evicted = dropOldest();
        options.onEvict?.(evicted);
      }
    },
    sweep(nowMs) {
      // Oldest first, up to the first segment still inside the window: a later one that has
      // expired too (its marks all older) goes once those before it have; its marks already
      // answer "not seen", since seen() compares each mark's own time.
      let removed = 0;
      while (segments.length > 0 && nowMs - (segments[0] as Segment).maxMs >= windowMs) removed += dropOldest();
      return removed;
    },
    get size() {
      return live;
    },
    get bytes() {
      return table.bytes;
    },
  };
}

/** A segment's marks: how many, and the range of their first-seen times. */
class Segment {
  count = 0;
  minMs: number;
  maxMs: number;

  constructor(
    readonly generation: number,
    firstSeenMs: number,
  ) {
    this.minMs = firstSeenMs;
    this.maxMs = firstSeenMs;
  }

  widen(firstSeenMs: number): void {
    if (firstSeenMs < this.minMs) this.minMs = firstSeenMs;
    if (firstSeenMs > this.maxMs) this.maxMs = firstSeenMs;
  }
}

const INITIAL_SLOTS = 1024;
/** Occupied slots (live and dropped marks) past this share of the table: rebuilt. */
const MAX_LOAD = 0.7;
/** A rebuild sizes the table so that the live marks fill at most this share of it. */
const REBUILT_LOAD = 0.5;

/**
 * An open-addressing (linear probing) table of fingerprints, first-seen times and segment
 * generations. A slot keeps 96 of the fingerprint's 128 bits (24 bytes a slot with the time and
 * the generation, as the eight tables before it had with all 128): two marks of a partition,
 * which holds at most DEDUPE_MAX_MARKS_PER_PARTITION (2,000,000), share them with odds of
 * n²/2⁹⁷, about 2.5·10⁻¹⁷; the changelog still carries all 16 bytes. A slot whose generation is below `oldestLive` belongs to a dropped segment: free
 * for an insert, skipped by a look-up (which goes on past it, as past any other key).
 */
class MarkTable {
  oldestLive = 0;
  private occupied = 0;
  private words = new Uint32Array(INITIAL_SLOTS * 3);
  // firstSeenMs + 1, so that 0 marks an empty slot.
  private times = new Float64Array(INITIAL_SLOTS);
  private generations = new Uint32Array(INITIAL_SLOTS);

  get bytes(): number {
    return this.words.byteLength + this.times.byteLength + this.generations.byteLength;
  }

  /** The slot of the fingerprint's live mark, or -1. */
  find(fp: Fingerprint): number {
    const w0 = word(fp, 0);
    const w1 = word(fp, 1);
    const w2 = word(fp, 2);
    const { words, times, generations } = this;
    const mask = times.length - 1;
    for (let slot = w0 & mask; ; slot = (slot + 1) & mask) {
      if (times[slot] === 0) return -1;
      const at = slot * 3;
      if (words[at] === w0 && words[at + 1] === w1 && words[at + 2] === w2 && (generations[slot] as number) >= this.oldestLive) return slot;
    }
  }

  firstSeenAt(slot: number): number {
    return (this.times[slot] as number) - 1;
  }

  generationAt(slot: number): number {
    return this.generations[slot] as number;
  }

  setFirstSeen(slot: number, firstSeenMs: number): void {
    this.times[slot] = firstSeenMs + 1;
  }

  /** Adds a fingerprint that has no live mark (find() gave -1); `live` counts it. */
  insert(fp: Fingerprint, firstSeenMs: number, generation: number, live: number): void {
    if (this.occupied + 1 > this.times.length * MAX_LOAD) this.rebuild(live);
    this.place(word(fp, 0), word(fp, 1), word(fp, 2), firstSeenMs + 1, generation);
  }

  private place(w0: number, w1: number, w2: number, time: number, generation: number): void {
    const { words, times, generations } = this;
    const mask = times.length - 1;
    let slot = w0 & mask;
    // The first free slot on the key's path: empty, or a dropped segment's.
    while (times[slot] !== 0 && (generations[slot] as number) >= this.oldestLive) slot = (slot + 1) & mask;
    if (times[slot] === 0) this.occupied++;
    const at = slot * 3;
    words[at] = w0;
    words[at + 1] = w1;
    words[at + 2] = w2;
    times[slot] = time;
    generations[slot] = generation;
  }

  /** A table sized for `live` marks, with the live marks only (dropped segments' slots left behind). */
  private rebuild(live: number): void {
    const { words, times, generations } = this;
    let slots = INITIAL_SLOTS;
    while (live > slots * REBUILT_LOAD) slots *= 2;
    this.words = new Uint32Array(slots * 3);
    this.times = new Float64Array(slots);
    this.generations = new Uint32Array(slots);
    this.occupied = 0;
    for (let slot = 0; slot < times.length; slot++) {
      const time = times[slot] as number;
      const generation = generations[slot] as number;
      if (time === 0 || generation < this.oldestLive) continue;
      const at = slot * 3;
      this.place(words[at] as number, words[at + 1] as number, words[at + 2] as number, time, generation);
    }
  }
}

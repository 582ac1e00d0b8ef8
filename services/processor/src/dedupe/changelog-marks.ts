import type { OutgoingMessage } from '@ingest/platform';
import { FINGERPRINT_BYTES, type Fingerprint, fingerprintOfKey } from './dedupe-window.js';

/** A first-seen mark as the changelog carries it. */
export type Mark = readonly [fp: Fingerprint, firstSeenMs: number];

/**
 * Marks travel in batches, not one message per event: a batch's first-seen marks are one (or a
 * few) changelog messages, keyed by partition and first offset. The changelog is kept by time
 * (8 days) rather than compacted, since each key is marked once per window anyway.
 *
 * Format 2 is binary: a version byte, then per mark the 16-byte fingerprint and the first-seen
 * time as a float64 (24 bytes a mark; format 1 was JSON with the whole key, ~70 bytes). Format 1
 * messages are still read, so a changelog written by an older processor restores.
 */
const MARKS_PER_MESSAGE = 2_000;
const FORMAT = 2;
const MARK_BYTES = FINGERPRINT_BYTES + 8;

export function encodeMarks(marks: readonly Mark[], partition: number, firstOffset: string): OutgoingMessage[] {
  const out: OutgoingMessage[] = [];
  for (let i = 0; i < marks.length; i += MARKS_PER_MESSAGE) {
    const chunk = marks.slice(i, i + MARKS_PER_MESSAGE);
    const value = Buffer.allocUnsafe(1 + chunk.length * MARK_BYTES);
    value[0] = FORMAT;
    chunk.forEach(([fp, firstSeenMs], j) => {
      const at = 1 + j * MARK_BYTES;
      value.write(fp, at, FINGERPRINT_BYTES, 'latin1');
      value.writeDoubleLE(firstSeenMs, at + FINGERPRINT_BYTES);
    });
    out.push({ key: `${partition}:${firstOffset}:${i}`, value, partition });
  }
  return out;
}

/** The marks of one changelog message; what it cannot read it skips (a changelog is advisory). */
export function decodeMarks(value: Buffer | null): Mark[] {
  if (!value || value.length === 0) return [];
  if (value[0] === FORMAT) {
    if ((value.length - 1) % MARK_BYTES !== 0) return [];
    const marks: Mark[] = [];
    for (let at = 1; at < value.length; at += MARK_BYTES) {
      const firstSeenMs = value.readDoubleLE(at + FINGERPRINT_BYTES);
      if (Number.isFinite(firstSeenMs)) marks.push([value.toString('latin1', at, at + FINGERPRINT_BYTES), firstSeenMs]);
    }
    return marks;
  }
  return decodeJsonMarks(value);
}

function decodeJsonMarks(value: Buffer): Mark[] {
  try {
    const parsed = JSON.parse(value.toString()) as { v?: unknown; marks?: unknown };
    if (parsed?.v !== 1 || !Array.isArray(parsed.marks)) return [];
    return parsed.marks
      .filter((m): m is [string, number] => Array.isArray(m) && typeof m[0] === 'string' && Number.isFinite(m[1]))
      .map(([key, firstSeenMs]) => [fingerprintOfKey(key), firstSeenMs]);
  } catch {
    return [];
  }
}

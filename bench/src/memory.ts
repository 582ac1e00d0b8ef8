/**
 * The "bounded memory" criterion. The processor's only state that grows with traffic is its
 * dedupe marks, capped per partition (DEDUPE_MAX_MARKS_PER_PARTITION); the bench runs it with a
 * small cap so the cap is reached within minutes. Bounded = the marks never exceeded the cap,
 * the cap was reached (marks were evicted), and RSS stopped growing over the second half of the
 * pipeline phases. Redis is reported, not judged (see the note in the report).
 */
import type { Observation } from './observe.js';
import { sum } from './prom.js';

export interface MemoryFigures {
  boundPerPartition?: number;
  partitions: number;
  /** Highest ingest_dedupe_marks seen in any reading. */
  marksMax: number;
  marksEnd: number;
  markMbEnd: number;
  /** ingest_dedupe_evicted_marks_total at the last reading (since the processor started). */
  evicted: number;
  /** Seconds from the first reading: the second half starts at `middle`. */
  spanS: number;
  rssMb: Record<string, { first?: number; middle?: number; end?: number; peak?: number }>;
  redisUsedMb: { first?: number; end?: number };
}

export interface MemoryVerdict {
  ok: boolean;
  problems: string[];
}

/** Growth in the second half allowed before RSS counts as growing: 10% or 50 MB, whichever is larger. */
export const RSS_TOLERANCE = { share: 0.1, mb: 50 };

export function memoryFigures(readings: Observation[], boundPerPartition: number | undefined, partitions: number): MemoryFigures | undefined {
  const first = readings[0];
  const last = readings.at(-1);
  if (!first || !last) return undefined;
  const midAt = (first.atMs + last.atMs) / 2;
  const middle = readings.reduce((best, r) => (Math.abs(r.atMs - midAt) < Math.abs(best.atMs - midAt) ? r : best), first);
  const mb = (o: Observation, name: string) => {
    const m = o.proc.memory[name];
    return m ? m.rssBytes / 1024 / 1024 : undefined;
  };
  const rssMb: MemoryFigures['rssMb'] = {};
  for (const name of ['gateway', 'processor']) {
    const peak = last.proc.memory[name]?.peakRssBytes;
    rssMb[name] = { first: mb(first, name), middle: mb(middle, name), end: mb(last, name), peak: peak === undefined ? undefined : peak / 1024 / 1024 };
  }
  const toMb = (b: number | undefined) => (b === undefined || !Number.isFinite(b) ? undefined : b / 1024 / 1024);
  return {
    boundPerPartition,
    partitions,
    marksMax: Math.max(...readings.map((r) => sum(r.processor, 'ingest_dedupe_marks'))),
    marksEnd: sum(last.processor, 'ingest_dedupe_marks'),
    markMbEnd: sum(last.processor, 'ingest_dedupe_mark_bytes') / 1024 / 1024,
    evicted: sum(last.processor, 'ingest_dedupe_evicted_marks_total'),
    spanS: (last.atMs - first.atMs) / 1000,
    rssMb,
    redisUsedMb: { first: toMb(first.redisUsedMemory), end: toMb(last.redisUsedMemory) },
  };
}

export function judgeMemory(m: MemoryFigures): MemoryVerdict {
  const problems: string[] = [];
  const cap = m.boundPerPartition === undefined ? undefined : m.boundPerPartition * m.partitions;
  if (cap === undefined) problems.push('the dedupe bound is unknown');
  else if (m.marksMax > cap) problems.push(`dedupe marks reached ${m.marksMax}, above the bound ${cap}`);
  if (m.evicted <= 0) problems.push('no dedupe mark was evicted: the bound was never reached, so it was not shown to hold');
  for (const [name, r] of Object.entries(m.rssMb)) {
    if (r.middle === undefined || r.end === undefined) {
      problems.push(`no RSS for the ${name}`);
      continue;
    }
    const grew = r.end - r.middle;
    if (grew > Math.max(RSS_TOLERANCE.mb, r.middle * RSS_TOLERANCE.share)) problems.push(`${name} RSS grew by ${Math.round(grew)} MB in the second half`);
  }
  return { ok: problems.length === 0, problems };
}

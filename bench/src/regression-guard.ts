/**
 * The regression guard: a run's main figures against the runs recorded in `bench/recorded/`
 * (three quiet runs of the same profile, written by `npm run bench:record`). A figure has moved
 * when it lies outside the recorded runs' range widened by half their spread (at least 5% of
 * their median either way: two runs rarely agree closer than that on this machine). The guard
 * says what moved and in which direction; it fails nothing, since a run beside other work moves
 * every figure.
 */
import type { BenchResult } from './report.js';
import { n0, n1 } from './say.js';

export interface GuardedFigure {
  key: string;
  label: string;
  unit: string;
  higherIsBetter: boolean;
  read: (r: BenchResult) => number | undefined;
}

/** The step the search called flat at its highest rate: the operating point. */
/** The search's step at its highest flat rate. */
export function flatStep(r: BenchResult) {
  const s = r.search;
  return s?.steps.find((x) => x.verdict.flat && x.targetEventsPerSec === s.sustainableEventsPerSec);
}

const flatCpu = (process: string) => (r: BenchResult) => flatStep(r)?.cpuPerMillion[process];

export const GUARDED_FIGURES: readonly GuardedFigure[] = [
  { key: 'endToEnd', label: 'end to end, lag flat', unit: 'events/s', higherIsBetter: true, read: (r) => r.search?.sustainableEventsPerSec },
  { key: 'acceptUnpaced', label: 'gateway accept capacity (unpaced)', unit: 'events/s', higherIsBetter: true, read: (r) => r.pipeline?.acceptedEventsPerSec },
  { key: 'p99Unpaced', label: 'send -> 202 p99, unpaced', unit: 'ms', higherIsBetter: false, read: (r) => r.pipeline?.latencyMs.p99 },
  { key: 'p99Flat', label: 'send -> 202 p99, highest flat step', unit: 'ms', higherIsBetter: false, read: (r) => flatStep(r)?.latency202Ms.p99 },
  { key: 'freshnessP99', label: 'freshness p99 at half the flat rate', unit: 'ms', higherIsBetter: false, read: (r) => r.freshness?.latencyMs.p99 },
  { key: 'writerPercent', label: 'writer alone / raw insert', unit: '%', higherIsBetter: true, read: (r) => pct(r.ratios.writerVsClickHouseInsert) },
  { key: 'cpuGatewayFlat', label: 'gateway CPU s per 1M events, flat', unit: 's', higherIsBetter: false, read: flatCpu('gateway') },
  { key: 'cpuProcessorFlat', label: 'processor CPU s per 1M events, flat', unit: 's', higherIsBetter: false, read: flatCpu('processor') },
  { key: 'cpuRedisFlat', label: 'Redis CPU s per 1M events, flat', unit: 's', higherIsBetter: false, read: flatCpu('redis') },
  { key: 'cpuKafkaFlat', label: 'Kafka CPU s per 1M events, flat', unit: 's', higherIsBetter: false, read: flatCpu('kafka') },
  { key: 'cpuClickHouseFlat', label: 'ClickHouse CPU s per 1M events, flat', unit: 's', higherIsBetter: false, read: flatCpu('clickhouse') },
];

function pct(ratio: number | undefined): number | undefined {
  return ratio === undefined ? undefined : ratio * 100;
}

/** `bench/recorded/<profile>.json`. */
export interface RecordedRuns {
  profile: string;
  /** When the recorded runs started, and the commit they measured. */
  runs: { startedAt: string; commit: string; figures: Record<string, number> }[];
  machine: string;
}

export function figuresOf(r: BenchResult): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of GUARDED_FIGURES) {
    const v = f.read(r);
    if (v !== undefined && Number.isFinite(v)) out[f.key] = v;
  }
  return out;
}

export type Movement = 'within' | 'better' | 'worse' | 'not measured' | 'not recorded';

export interface GuardLine {
  key: string;
  label: string;
  unit: string;
  now?: number;
  recorded: number[];
  /** The range a figure may take without having moved. */
  band?: { low: number; high: number };
  movement: Movement;
}

/** The least widening of the recorded range on each side, as a share of its median. */
export const MIN_TOLERANCE = 0.05;

export function median(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] ?? NaN) : ((s[mid - 1] ?? NaN) + (s[mid] ?? NaN)) / 2;
}

export function compareWithRecorded(now: Record<string, number>, recorded: RecordedRuns): GuardLine[] {
  return GUARDED_FIGURES.map((f) => {
    const values = recorded.runs.map((run) => run.figures[f.key]).filter((v): v is number => v !== undefined);
    const current = now[f.key];
    const base = { key: f.key, label: f.label, unit: f.unit, now: current, recorded: values };
    if (values.length === 0) return { ...base, movement: 'not recorded' as const };
    const low = Math.min(...values);
    const high = Math.max(...values);
    const widen = Math.max((high - low) / 2, MIN_TOLERANCE * Math.abs(median(values)));
    const band = { low: low - widen, high: high + widen };
    if (current === undefined) return { ...base, band, movement: 'not measured' as const };
    const up = current > band.high;
    const down = current < band.low;
    const movement: Movement = !up && !down ? 'within' : up === f.higherIsBetter ? 'better' : 'worse';
    return { ...base, band, movement };
  });
}

export function formatGuard(lines: readonly GuardLine[], recorded: RecordedRuns): string[] {
  const fmt = (v: number | undefined, unit: string) => (v === undefined ? '-' : unit === 'events/s' || unit === 'ms' ? n0(v) : n1(v));
  const runs = recorded.runs.map((r) => `${r.startedAt.slice(0, 16).replace('T', ' ')} ${r.commit}`).join(', ');
  const out = [`\nAgainst the recorded runs (bench/recorded/${recorded.profile}.json: ${recorded.machine}; ${runs})`];
  out.push(`  ${'figure'.padEnd(40)} ${'now'.padStart(9)}  ${'recorded runs'.padEnd(26)} ${'no move within'.padEnd(20)} verdict`);
  for (const l of lines) {
    if (l.movement === 'not recorded' && l.now === undefined) continue;
    const rec = l.recorded.map((v) => fmt(v, l.unit)).join(' / ');
    const band = l.band ? `${fmt(l.band.low, l.unit)} .. ${fmt(l.band.high, l.unit)}` : '-';
    const verdict = l.movement === 'worse' ? 'WORSE' : l.movement;
    out.push(`  ${`${l.label} (${l.unit})`.padEnd(40)} ${fmt(l.now, l.unit).padStart(9)}  ${rec.padEnd(26)} ${band.padEnd(20)} ${verdict}`);
  }
  const moved = lines.filter((l) => l.movement === 'better' || l.movement === 'worse');
  out.push(
    moved.length === 0
      ? "  no figure moved beyond the recorded runs' spread"
      : `  moved beyond the recorded runs' spread: ${moved.map((l) => `${l.label} ${l.movement === 'worse' ? 'WORSE' : 'better'}`).join('; ')}`,
  );
  return out;
}

/** Reads a service's /metrics (Prometheus text format) into samples that can be summed. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export type Samples = Sample[];

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parsePrometheus(text: string): Samples {
  const samples: Samples = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const l of (match[2] ?? '').matchAll(LABEL)) labels[l[1] ?? ''] = (l[2] ?? '').replace(/\\(.)/g, '$1');
    samples.push({ name: match[1] ?? '', labels, value: Number(match[3]) });
  }
  return samples;
}

export async function scrape(url: string): Promise<Samples> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
  if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`);
  return parsePrometheus(await res.text());
}

/** Scrape that yields no samples instead of failing: a missed reading must not end the run. */
export async function scrapeOrEmpty(url: string): Promise<Samples> {
  return scrape(url).catch(() => []);
}

function matches(sample: Sample, name: string, filter: Record<string, string>): boolean {
  return sample.name === name && Object.entries(filter).every(([k, v]) => sample.labels[k] === v);
}

export function sum(samples: Samples, name: string, filter: Record<string, string> = {}): number {
  return samples.filter((s) => matches(s, name, filter)).reduce((acc, s) => acc + s.value, 0);
}

/** Sum per value of one label, e.g. lag per consumer group. */
export function sumBy(samples: Samples, name: string, label: string, filter: Record<string, string> = {}): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of samples) {
    if (!matches(s, name, filter)) continue;
    const key = s.labels[label] ?? '';
    out[key] = (out[key] ?? 0) + s.value;
  }
  return out;
}

/** Counter delta between two scrapes, per label value. */
export function deltaBy(before: Samples, after: Samples, name: string, label: string, filter: Record<string, string> = {}): Record<string, number> {
  const a = sumBy(before, name, label, filter);
  const b = sumBy(after, name, label, filter);
  return Object.fromEntries(Object.entries(b).map(([k, v]) => [k, v - (a[k] ?? 0)]));
}

export function delta(before: Samples, after: Samples, name: string, filter: Record<string, string> = {}): number {
  return sum(after, name, filter) - sum(before, name, filter);
}

/**
 * Histogram bucket counts observed between two scrapes, as [upper bound, count in that bucket]
 * (not cumulative), for one histogram and label filter.
 */
export function histogramDelta(before: Samples, after: Samples, name: string, filter: Record<string, string> = {}): [string, number][] {
  const cumulative = (samples: Samples) => {
    const out = new Map<string, number>();
    for (const s of samples) if (matches(s, `${name}_bucket`, filter)) out.set(s.labels.le ?? '', (out.get(s.labels.le ?? '') ?? 0) + s.value);
    return out;
  };
  const a = cumulative(before);
  const b = cumulative(after);
  const bounds = [...b.keys()].sort((x, y) => (x === '+Inf' ? 1 : y === '+Inf' ? -1 : Number(x) - Number(y)));
  let previous = 0;
  return bounds.map((le) => {
    const c = (b.get(le) ?? 0) - (a.get(le) ?? 0);
    const inBucket = c - previous;
    previous = c;
    return [le, inBucket];
  });
}

/** Observations in histogram buckets (as histogramDelta gives them). */
export function observations(buckets: [string, number][]): number {
  return buckets.reduce((n, [, c]) => n + c, 0);
}

/** Seconds over a count, as milliseconds each; undefined for no count. */
export function ratioMs(seconds: number, count: number): number | undefined {
  return count > 0 ? (seconds / count) * 1000 : undefined;
}

/** A gauge in seconds, as milliseconds; undefined when the scrape does not have it. */
export function gaugeMs(samples: Samples, name: string): number | undefined {
  const present = samples.some((s) => s.name === name);
  return present ? sum(samples, name) * 1000 : undefined;
}

/**
 * What the services really export to Prometheus: every METRIC_NAMES entry with the type and
 * label names of the place that creates it (read from the service sources, so a metric that is
 * named but never created, or a label that does not exist, is caught), the prom-client default
 * metrics, and the `up` series Prometheus adds per target. Dashboards and alert rules are
 * checked against this (deploy/checks/deploy-metrics.test.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createMetricsRegistry, METRIC_NAMES, REPO_ROOT } from '@ingest/platform';

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary';

export interface ExportedSeries {
  /** The metric as the services define it (without _bucket/_sum/_count). */
  metric: string;
  type: MetricType;
  /** Label names a selector may match on; undefined when not known (prom-client defaults). */
  labels?: ReadonlySet<string>;
  /** Where it is created, for messages. */
  source: string;
}

/** Labels every series has: the registry's default label and what Prometheus adds per target. */
export const COMMON_LABELS = ['service', 'job', 'instance'] as const;

export interface MetricDefinition {
  key: keyof typeof METRIC_NAMES;
  type: MetricType;
  labelNames: string[];
  source: string;
}

const CREATION = /new (Counter|Gauge|Histogram|Summary)\s*(?:<[^>]*>)?\s*\(\s*\{|shared(Counter|Histogram)\s*(?:<[^>]*>)?\s*\([^,]+,\s*\{/g;

/** The metric definitions in one source file: `new Counter({ name: METRIC_NAMES.x, labelNames: [...] })`, sharedCounter and sharedHistogram. */
export function definitionsIn(source: string, file: string): MetricDefinition[] {
  const found: MetricDefinition[] = [];
  for (const m of source.matchAll(CREATION)) {
    const open = (m.index ?? 0) + m[0].length - 1;
    const body = objectLiteral(source, open);
    const key = /\bname:\s*METRIC_NAMES\.(\w+)/.exec(body)?.[1];
    if (!key) continue; // a metric not named through METRIC_NAMES is not ours to vouch for
    if (!(key in METRIC_NAMES)) throw new Error(`${file}: METRIC_NAMES.${key} does not exist`);
    const labelList = /\blabelNames:\s*\[([^\]]*)\]/.exec(body)?.[1] ?? '';
    const line = source.slice(0, m.index).split('\n').length;
    found.push({
      key: key as keyof typeof METRIC_NAMES,
      type: (m[1] ?? m[2] ?? 'Counter').toLowerCase() as MetricType,
      labelNames: [...labelList.matchAll(/['"]([^'"]+)['"]/g)].map((l) => l[1] ?? ''),
      source: `${file}:${line}`,
    });
  }
  return found;
}

function objectLiteral(source: string, open: number): string {
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    if (source[i] === '{') depth++;
    if (source[i] === '}' && --depth === 0) return source.slice(open, i + 1);
  }
  throw new Error('unbalanced braces');
}

/** Every metric definition in the services' and shared packages' production sources (tests excluded). */
export function serviceMetricDefinitions(root = REPO_ROOT): MetricDefinition[] {
  return ['services', 'packages'].flatMap((top) => {
    const files = readdirSync(join(root, top), { recursive: true, encoding: 'utf8' }).filter(
      (f) => /\/src\//.test(f) && f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.includes('node_modules'),
    );
    return files.flatMap((f) => definitionsIn(readFileSync(join(root, top, f), 'utf8'), `${top}/${f}`));
  });
}

/** Series name (with histogram suffixes) -> what it is. */
export async function exportedSeries(root = REPO_ROOT): Promise<Map<string, ExportedSeries>> {
  const series = new Map<string, ExportedSeries>();
  const add = (metric: string, type: MetricType, labels: Set<string> | undefined, source: string) => {
    const withCommon = labels && new Set([...labels, ...COMMON_LABELS]);
    series.set(metric, { metric, type, labels: withCommon, source });
    if (type === 'histogram') {
      series.set(`${metric}_bucket`, { metric, type, labels: withCommon && new Set([...withCommon, 'le']), source });
      series.set(`${metric}_sum`, { metric, type, labels: withCommon, source });
      series.set(`${metric}_count`, { metric, type, labels: withCommon, source });
    }
    if (type === 'summary') {
      series.set(metric, { metric, type, labels: withCommon && new Set([...withCommon, 'quantile']), source });
      series.set(`${metric}_sum`, { metric, type, labels: withCommon, source });
      series.set(`${metric}_count`, { metric, type, labels: withCommon, source });
    }
  };

  for (const d of serviceMetricDefinitions(root)) {
    const name = METRIC_NAMES[d.key];
    const known = series.get(name);
    // sharedCounter: several parts register one counter; the label sets must agree.
    if (known && [...d.labelNames, ...COMMON_LABELS].some((l) => !known.labels?.has(l))) {
      throw new Error(`${name} is created with different labels in ${known.source} and ${d.source}`);
    }
    if (!known) add(name, d.type, new Set(d.labelNames), d.source);
  }

  // prom-client's default metrics, exactly as a service registry collects them.
  const registry = createMetricsRegistry('catalogue');
  for (const m of await registry.getMetricsAsJSON()) {
    add(m.name, String(m.type) as MetricType, undefined, 'prom-client default metrics');
  }
  registry.clear();

  series.set('up', { metric: 'up', type: 'gauge', labels: new Set(['job', 'instance']), source: 'Prometheus (one per target)' });
  return series;
}

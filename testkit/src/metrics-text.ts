/**
 * The value of one series in Prometheus text exposition, matched by name and labels in any
 * order (prom-client orders histogram labels differently from counter labels). Undefined when
 * no such series is exported; the labels given must all match, others may be present.
 */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = new Map([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) return Number(m[3]);
  }
  return undefined;
}

/** Sum of all samples of a metric in Prometheus text. */
export function metricSum(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** The sum of a metric's samples per value of one label; values without samples are absent. */
export function sumByLabel(text: string, name: string, label: string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const value = new RegExp(`${label}="([^"]*)"`).exec(line)?.[1];
    if (value === undefined) continue;
    sums.set(value, (sums.get(value) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return sums;
}

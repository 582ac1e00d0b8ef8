/** Progress output: one timestamped line per event, on stderr so stdout stays the report. */
const started = Date.now();

export function say(phase: string, message: string): void {
  const elapsed = ((Date.now() - started) / 1000).toFixed(0).padStart(4);
  process.stderr.write(`[${elapsed}s] ${phase.padEnd(10)} ${message}\n`);
}

const nf0 = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
const nf1 = new Intl.NumberFormat('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
const nf2 = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** 12,345 */
export function n0(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '-' : nf0.format(value);
}

export function n1(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '-' : nf1.format(value);
}

export function n2(value: number | undefined): string {
  return value === undefined || !Number.isFinite(value) ? '-' : nf2.format(value);
}

/** A change with its sign: `+12`, `-3`, `+0`; `-` when there is none (n0 or n1 for the digits). */
export function signed(value: number | undefined, format: (v: number | undefined) => string = n0): string {
  return value === undefined || !Number.isFinite(value) ? '-' : `${value >= 0 ? '+' : ''}${format(value)}`;
}

export function mb(bytes: number | undefined): string {
  return bytes === undefined || !Number.isFinite(bytes) ? '-' : `${nf0.format(bytes / 1024 / 1024)} MB`;
}

export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

/**
 * The closing summary of `npm test` (scripts/test.sh): how long each step and each vitest project
 * took, so that CI time is seen growing where it grows, then the one line CI readers take the
 * result from, `tests: N passed, N failed, N skipped`, which must stay the last line printed.
 *
 *   node --import tsx scripts/test/summary.ts RESULTS_DIR EXIT_CODE TOTAL_MS
 *
 * RESULTS_DIR holds timings.tsv (written by scripts/test.sh) and each project's vitest JSON report
 * (<project>.json). When npm test failed, the durations so far are printed and, last, the step
 * that failed; no `tests:` line, as before.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** One line of timings.tsv: `step NAME MS STATUS`, or `project STEP NAME MS STATUS` for the vitest project run in STEP. */
export type Timing = { kind: 'step'; name: string; ms: number; ok: boolean } | { kind: 'project'; step: string; name: string; ms: number; ok: boolean };

export interface Counts {
  passed: number;
  failed: number;
  skipped: number;
}

export function parseTimings(tsv: string): Timing[] {
  return tsv
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line): Timing => {
      const f = line.split('\t');
      if (f[0] === 'project') return { kind: 'project', step: f[1] ?? '', name: f[2] ?? '', ms: Number(f[3]), ok: f[4] === 'ok' };
      if (f[0] === 'step') return { kind: 'step', name: f[1] ?? '', ms: Number(f[2]), ok: f[3] === 'ok' };
      throw new Error(`timings.tsv: unexpected line ${JSON.stringify(line)}`);
    });
}

/** The counts of a vitest JSON report, as the `tests:` line sums them. */
export function countsOf(report: { numPassedTests: number; numFailedTests: number; numPendingTests: number; numTodoTests: number }): Counts {
  return { passed: report.numPassedTests, failed: report.numFailedTests, skipped: report.numPendingTests + report.numTodoTests };
}

export function duration(ms: number): string {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const whole = Math.round(s);
  return `${Math.floor(whole / 60)}m ${String(whole % 60).padStart(2, '0')}s`;
}

/** The summary's lines, last one last. `counts` by project name; `exitCode` 0 when every step passed. */
export function formatSummary(timings: Timing[], counts: Record<string, Counts>, exitCode: number, totalMs: number): string[] {
  const steps = timings.filter((t) => t.kind === 'step');
  const projects = timings.filter((t) => t.kind === 'project');
  const width = Math.max(0, ...steps.map((s) => s.name.length), ...projects.map((p) => `vitest project ${p.name}`.length + 2));
  const row = (label: string, ms: number, note: string) =>
    `  ${label.padEnd(width)}  ${duration(ms).padStart(7)}  ${String(Math.round((100 * ms) / Math.max(totalMs, 1))).padStart(3)}%${note ? `  ${note}` : ''}`;
  const lines = ['', `Durations (total ${duration(totalMs)}):`];
  for (const step of steps) {
    lines.push(row(step.name, step.ms, step.ok ? '' : 'FAILED'));
    for (const p of projects.filter((p) => p.step === step.name)) {
      const c = counts[p.name];
      const note = c ? `${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped` : 'no report';
      lines.push(row(`  vitest project ${p.name}`, p.ms, p.ok ? note : `FAILED: ${note}`));
    }
  }
  if (exitCode !== 0) {
    const failed = steps.find((s) => !s.ok);
    lines.push('', `npm test failed in step "${failed?.name ?? 'unknown'}" (exit ${exitCode}) after ${duration(totalMs)}`);
    return lines;
  }
  const total = Object.values(counts).reduce((a, c) => ({ passed: a.passed + c.passed, failed: a.failed + c.failed, skipped: a.skipped + c.skipped }), {
    passed: 0,
    failed: 0,
    skipped: 0,
  });
  lines.push('', `all checks passed in ${Math.round(totalMs / 1000)}s`, `tests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
  return lines;
}

function main(resultsDir: string, exitCode: number, totalMs: number): void {
  const timings = parseTimings(readFileSync(join(resultsDir, 'timings.tsv'), 'utf8'));
  const counts: Record<string, Counts> = {};
  for (const t of timings) {
    if (t.kind !== 'project') continue;
    const file = join(resultsDir, `${t.name}.json`);
    // After a pass every project has its report; without one the tests: line would undercount.
    if (!existsSync(file) && exitCode === 0) throw new Error(`${file} is missing: vitest project ${t.name} wrote no report`);
    if (existsSync(file)) counts[t.name] = countsOf(JSON.parse(readFileSync(file, 'utf8')) as Parameters<typeof countsOf>[0]);
  }
  console.log(formatSummary(timings, counts, exitCode, totalMs).join('\n'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [dir, code, ms] = process.argv.slice(2);
  main(dir ?? '.', Number(code ?? 0), Number(ms ?? 0));
}

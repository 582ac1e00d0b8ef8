/**
 * `npm run bench:record -- <profile> <result.json> ...`: writes `bench/recorded/<profile>.json`
 * from the result files of quiet runs (three, as the targets are judged on their median), which
 * every later run of that profile is compared with (regression-guard.ts). Commit the file with the
 * figures in docs/benchmarks.md.
 */
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { figuresOf, type RecordedRuns } from './regression-guard.js';
import type { BenchResult } from './report.js';

const [profile, ...files] = process.argv.slice(2).filter((a) => a !== '--');
if (!profile || files.length === 0 || !['pipeline', 'tenants'].includes(profile)) {
  console.error('usage: npm run bench:record -- pipeline|tenants <result.json> [<result.json> ...]  (the results of quiet runs, under .local/bench/)');
  process.exit(2);
}
const results = files.map((file) => {
  const r = JSON.parse(readFileSync(file, 'utf8')) as BenchResult;
  if (!basename(file).startsWith(`${profile}-`)) throw new Error(`${file} is not a ${profile} run`);
  if (r.errors.length > 0) throw new Error(`${file} ended with errors: ${r.errors[0]?.split('\n')[0] ?? ''}`);
  return r;
});
const first = results[0];
const recorded: RecordedRuns = {
  profile,
  machine: `${first?.machine.cores ?? '?'} cores, Node ${first?.machine.node ?? '?'}, Kafka, ClickHouse and Redis co-located`,
  runs: results.map((r) => ({ startedAt: r.startedAt, commit: r.commit ?? 'unknown', figures: figuresOf(r) })),
};
const dir = join(REPO_ROOT, 'bench', 'recorded');
mkdirSync(dir, { recursive: true });
const out = join(dir, `${profile}.json`);
writeFileSync(out, `${JSON.stringify(recorded, null, 2)}\n`);
console.log(`recorded ${results.length} run(s) of ${profile} in ${out}${results.length < 3 ? ' (fewer than three: the spread is a guess)' : ''}`);

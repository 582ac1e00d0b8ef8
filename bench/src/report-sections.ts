/** The report's sections for the writer phase, the lag-flat search, the memory check and the soak. */
import type { MemoryFigures, MemoryVerdict } from './memory.js';
import { n0, n1, signed } from './say.js';
import type { SearchResult } from './search.js';
import type { SoakResult } from './soak.js';
import type { WriterResult } from './writer-phase.js';

export function formatWriter(w: WriterResult, rawRowsPerSec: number | undefined): string[] {
  const vs = (v: number) => (rawRowsPerSec ? ` = ${n1((v / rawRowsPerSec) * 100)}% of baseline B` : '');
  return [
    `\nWriter alone (PROCESSOR_STAGES=storage, ${n0(w.rows)} records already in events.unique, produced in ${n1(w.produceS)} s)`,
    `  from first rows        ${n0(w.rowsPerSecFromFirstRow).padStart(9)} rows/s     ${n0(w.rows - w.rowsAtFirstSeen)} rows in ${n1(w.fromFirstRowS)} s after the first ${n0(w.rowsAtFirstSeen)} were queryable${vs(w.rowsPerSecFromFirstRow)}`,
    `  from process start     ${n0(w.rowsPerSecFromStart).padStart(9)} rows/s     ${n0(w.rows)} rows in ${n1(w.fromStartS)} s, including ${n1(w.startupS)} s until /readyz and the group join${vs(w.rowsPerSecFromStart)}`,
    `  inserts                ${n1(w.insertsPerSec).padStart(9)} inserts/s  ${n0(w.inserts)} inserts, avg ${n0(w.avgRowsPerInsert)} rows/insert, ${n0(w.rowsPerInsertSecond)} rows per insert-second; processor ${n1(w.processorCpuS)} CPU s`,
  ];
}

export function formatSearch(s: SearchResult): string[] {
  const out = [
    `\nEnd to end with lag flat (paced steps: ${s.settleS} s settling + ${s.windowS} s window; first step 20% above the unpaced ${n0(s.startedFrom.unpacedEndToEnd)} rows/s, at most 125% of the ${n0(s.startedFrom.acceptCapacity)} events/s accepted)`,
  ];
  for (const [i, step] of s.steps.entries()) {
    const v = step.verdict;
    out.push(
      `  step ${i + 1}  ${n0(step.targetEventsPerSec).padStart(9)} events/s  ${v.flat ? 'flat    ' : 'NOT flat'}  accepted ${n0(v.achievedEventsPerSec)}/s, stored ${n0(step.storedEventsPerSec)}/s (end - start), backlog trend ${signed(v.growth)} (flat below +${n0(v.allowed)}; end - start ${n0(v.endpointGrowth)}); ` +
        `lag end dedupe ${n0(step.lag.end.dedupe)}, storage ${n0(step.lag.end.storage)}; drained in ${step.drainedInS === undefined ? '-' : `${n1(step.drainedInS)} s`}`,
    );
  }
  const best = s.steps.find((x) => x.verdict.flat && x.targetEventsPerSec === s.sustainableEventsPerSec);
  if (best) {
    const cpu = Object.entries(best.cpuPerMillion)
      .filter(([, v]) => v !== undefined)
      .map(([name, v]) => `${name} ${n1(v)}`)
      .join(', ');
    const rss = Object.entries(best.rssMb)
      .filter(([, v]) => v !== undefined)
      .map(([name, v]) => `${name} ${n0(v)} MB`)
      .join(', ');
    const inserts = Object.entries(best.insertsPerSec)
      .map(([table, v]) => `${table} ${n1(v)}/s`)
      .join(', ');
    out.push(`  at the flat rate       CPU s per 1M events accepted: ${cpu}; RSS ${rss}; inserts ${inserts || '-'}`);
  }
  out.push(
    `  end to end (lag flat)  ${s.sustainableEventsPerSec === undefined ? 'none of the rates tried' : `${n0(s.sustainableEventsPerSec).padStart(9)} events/s`}   flat = backlog (accepted - stored, least-squares trend over ~1 s readings) grew < max(2% of the window's events, 0.5 s of load) and >= 95% of the rate ${s.offeredBy}`,
  );
  return out;
}

export function formatMemory(m: MemoryFigures & { verdict: MemoryVerdict }): string[] {
  const rss = Object.entries(m.rssMb)
    .map(([name, r]) => `${name} ${n0(r.first)} / ${n0(r.middle)} / ${n0(r.end)} MB (peak ${n0(r.peak)})`)
    .join('; ');
  return [
    `\nMemory over the pipeline phases (${n0(m.spanS)} s from the unpaced window's start to the last reading)`,
    `  dedupe marks           max ${n0(m.marksMax)}, end ${n0(m.marksEnd)} (${n1(m.markMbEnd)} MB) of the bound ${n0((m.boundPerPartition ?? NaN) * m.partitions)}; evicted ${n0(m.evicted)}`,
    `  RSS first/middle/end   ${rss}`,
    `  Redis used_memory      ${n0(m.redisUsedMb.first)} -> ${n0(m.redisUsedMb.end)} MB (information, not judged: see below)`,
    '                         the allowance remembers caller-chosen event ids for 5 to 20 minutes (15-minute buckets) to make retries free, so',
    '                         Redis grows with rate x 30 min until that long has passed, then stays flat; in production a plan allowance also',
    '                         caps the ids per account (and sizes their sets), which the bench lifts by setting the counters back to 0 every',
    '                         second: beyond the plan the sets outgrow their compact form; the allowance phase above judges bytes per id',
  ];
}

export function formatSoak(s: SoakResult): string[] {
  const out = [
    `\nSoak (paced at ${n0(s.targetEventsPerSec)} events/s, accepted ${n0(s.achievedEventsPerSec)} over ${n0(s.seconds)} s; requests by status ${Object.entries(
      s.load.byStatus,
    )
      .map(([code, n]) => `${code}: ${n0(n)}`)
      .join(', ')})`,
    '  at s     RSS gateway  RSS processor  Redis used  seen-id sets  besides them  lag dedupe / storage',
  ];
  for (const r of s.readings) {
    out.push(
      `  ${n0(r.atS).padStart(5)}  ${n0(r.rssMb.gateway).padStart(8)} MB  ${n0(r.rssMb.processor).padStart(10)} MB  ${n1(r.redisUsedMb).padStart(7)} MB  ${n1(r.redisSeenIdsMb).padStart(9)} MB  ${n1(r.redisBesidesSeenIdsMb).padStart(9)} MB  ${n0(r.lag.dedupe)} / ${n0(r.lag.storage)}`,
    );
  }
  for (const x of s.series) {
    out.push(
      `  ${x.name.padEnd(40)} ${n0(x.middleMb)} -> ${n0(x.endMb)} MB over the second half, trend ${signed(x.trendMb, n1)} MB (allowed ${n0(x.allowedMb)})`,
    );
  }
  out.push(
    `  ${'lag, dedupe + storage'.padEnd(40)} ${s.lag.flat ? 'held' : 'NOT held'}: ${s.lag.reason} over the whole soak (flat below +${n0(s.lag.allowed)}; end - start ${n0(s.lag.endpointGrowth)})`,
  );
  return out;
}

/** The printed report and the JSON file: baselines, pipeline, freshness, ratios, targets. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { ClickHouseBaseline, KafkaBaseline, NoopBaseline } from './baselines.js';
import type { PipelineFigures } from './figures.js';
import type { FreshnessResult } from './freshness.js';
import type { ProfileSummary } from './profile.js';
import type { LogEntryCount } from './services.js';
import { n0, n1, n2 } from './say.js';

export interface BenchResult {
  startedAt: string;
  finishedAt?: string;
  machine: { cores: number; node: string; loadAverage: number[] };
  setup: Record<string, string | number>;
  notes: string[];
  baselines: { kafka?: KafkaBaseline; clickhouse?: ClickHouseBaseline; noop?: NoopBaseline };
  pipeline?: PipelineFigures;
  freshness?: Omit<FreshnessResult, 'start' | 'end'>;
  /** Why the freshness phase did not run. */
  freshnessSkipped?: string;
  profiles?: Record<string, ProfileSummary>;
  /** Warnings and errors in each service's log, grouped by message. */
  serviceLogs?: Record<string, LogEntryCount[]>;
  ratios: Record<string, number | undefined>;
  targets: Target[];
  errors: string[];
}

export interface Target {
  name: string;
  measured: string;
  verdict: 'pass' | 'FAIL' | 'n/a';
  note?: string;
}

const TARGET_EVENTS_PER_SEC = 20_000;

export function ratiosAndTargets(r: BenchResult): void {
  const p = r.pipeline;
  const events = p?.inserts.events;
  r.ratios = {
    endToEndVsKafkaProducer: div(p?.endToEnd.eventsPerSec, r.baselines.kafka?.recordsPerSec),
    writerVsClickHouseInsert: div(events?.rowsPerSec, r.baselines.clickhouse?.rowsPerSec),
    writerInsertSpeedVsClickHouseInsert: div(events?.rowsPerInsertSecond, r.baselines.clickhouse?.rowsPerSec),
    gatewayVsNoopFastify: div(p?.requestsPerSec, r.baselines.noop?.requestsPerSec),
  };
  const t: Target[] = [];
  if (p) {
    t.push({
      name: `end to end >= ${n0(TARGET_EVENTS_PER_SEC)} events/s`,
      measured: `${n0(p.endToEnd.eventsPerSec)} events/s`,
      verdict: p.endToEnd.eventsPerSec >= TARGET_EVENTS_PER_SEC ? 'pass' : 'FAIL',
    });
  }
  const f = r.freshness;
  if (f) {
    const halfTarget = TARGET_EVENTS_PER_SEC / 2;
    t.push({
      name: 'freshness p99 < 5 s at half load',
      measured: `${n2((f.latencyMs.p99 ?? NaN) / 1000)} s at ${n0(f.achievedEventsPerSec)} events/s`,
      verdict: f.latencyMs.p99 === undefined || f.probes.missing > 0 ? 'FAIL' : f.latencyMs.p99 < 5_000 ? 'pass' : 'FAIL',
      note: f.achievedEventsPerSec < halfTarget * 0.95 ? `run at half the measured rate, below the ${n0(halfTarget)} events/s the target means` : undefined,
    });
  }
  if (!f && r.freshnessSkipped) t.push({ name: 'freshness p99 < 5 s at half load', measured: 'not measured', verdict: 'n/a', note: r.freshnessSkipped });
  const ratio = r.ratios.writerVsClickHouseInsert;
  if (ratio !== undefined) {
    t.push({
      name: 'writer >= 70% of raw ClickHouse insert',
      measured: `${n1(ratio * 100)}% (insert speed ${n1((r.ratios.writerInsertSpeedVsClickHouseInsert ?? NaN) * 100)}%)`,
      verdict: ratio >= 0.7 ? 'pass' : 'FAIL',
      note: 'throughput over the window; bounded by what reaches the writer',
    });
  }
  if (p) {
    const worst = Object.entries(p.inserts).sort((a, b) => b[1].insertsPerSec - a[1].insertsPerSec)[0];
    t.push({
      name: '<= 2 inserts/s per table',
      measured: worst ? `${worst[0]}: ${n1(worst[1].insertsPerSec)}/s` : 'no inserts',
      verdict: worst ? (worst[1].insertsPerSec <= 2 ? 'pass' : 'FAIL') : 'n/a',
    });
    t.push(memoryTarget(p));
  }
  r.targets = t;
}

/**
 * Heuristic: RSS at the end of the window within 10% (or 32 MB) of the middle for both services,
 * and in-memory dedupe state that does not grow with every event.
 */
function memoryTarget(p: PipelineFigures): Target {
  const growth = ['gateway', 'processor'].map((name) => {
    const rss = p.processes[name]?.rssMb;
    const grew = (rss?.end ?? NaN) - (rss?.middle ?? NaN);
    return { name, grew, ok: Number.isFinite(grew) && (grew <= 32 || grew <= (rss?.middle ?? 0) * 0.1) };
  });
  const marks = p.state.dedupeMarks.end - p.state.dedupeMarks.start;
  const marksGrow = p.state.dedupePassed > 0 && marks >= p.state.dedupePassed * 0.5;
  const redis = (p.state.redisUsedMb.end ?? NaN) - (p.state.redisUsedMb.start ?? NaN);
  return {
    name: 'bounded memory',
    measured:
      `RSS 2nd half: ${growth.map((g) => `${g.name} ${g.grew >= 0 ? '+' : ''}${n0(g.grew)} MB`).join(', ')}; ` +
      `dedupe marks +${n0(marks)} for ${n0(p.state.dedupePassed)} events; Redis ${redis >= 0 ? '+' : ''}${n0(redis)} MB`,
    verdict: growth.every((g) => g.ok) && !marksGrow ? 'pass' : 'FAIL',
    note: marksGrow
      ? 'the processor keeps one in-memory mark per unique event (dedupe window), so its memory grows with traffic'
      : 'RSS flat = grew < 10% or < 32 MB over the 2nd half of the window',
  };
}

function div(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b === 0 ? undefined : a / b;
}

export function formatReport(r: BenchResult): string {
  const out: string[] = [];
  const line = (s = '') => out.push(s);
  line(
    `Pipeline benchmark ${r.startedAt} (${r.machine.cores} cores, Node ${r.machine.node}, load average at start ${r.machine.loadAverage.map(n2).join(' ')})`,
  );
  for (const [k, v] of Object.entries(r.setup)) line(`  ${k.padEnd(22)} ${v}`);
  for (const n of r.notes) line(`  note: ${n}`);

  line('\nBaselines');
  const { kafka, clickhouse, noop } = r.baselines;
  if (kafka) {
    line(
      `  A Kafka raw producer   ${n0(kafka.recordsPerSec).padStart(9)} records/s  ${n1(kafka.mbPerSec)} MB/s; ${n0(kafka.records)} x ${kafka.recordSize} B, acks=all, 12 partitions`,
    );
    line(
      `                         latency avg ${n0(kafka.avgLatencyMs)} ms, p50 ${n0(kafka.p50LatencyMs)} ms, p99 ${n0(kafka.p99LatencyMs)} ms; broker ${n1(kafka.brokerCpuSeconds)} CPU s = ${n1(perMillion(kafka.brokerCpuSeconds, kafka.records))} CPU s per 1M records`,
    );
  }
  if (clickhouse) {
    line(
      `  B ClickHouse insert    ${n0(clickhouse.rowsPerSec).padStart(9)} rows/s     ${clickhouse.inserts} sequential inserts of ${n0(clickhouse.batchRows)} rows (JSONEachRow), avg ${n0(clickhouse.insertMs.avg)} ms, max ${n0(clickhouse.insertMs.max)} ms`,
    );
    line(
      `                         server ${n1(clickhouse.clickhouseCpuSeconds)} CPU s = ${n1(perMillion(clickhouse.clickhouseCpuSeconds, clickhouse.rows))} CPU s per 1M rows`,
    );
  }
  if (noop) {
    line(
      `  C no-op fastify        ${n0(noop.requestsPerSec).padStart(9)} req/s      = ${n0(noop.eventsPerSec)} events/s at 100/request; p50 ${n0(noop.latencyMs.p50)} ms, p99 ${n0(noop.latencyMs.p99)} ms; server ${n0(pct(noop.serverCpuSeconds, noop.seconds))}% of a core, load generator ${n0(pct(noop.loadGeneratorCpuSeconds, noop.seconds))}%`,
    );
  }

  const p = r.pipeline;
  if (p) {
    line(`\nPipeline, sustained (${n0(p.windowS)} s window after ${n0(p.warmupS)} s warm-up)`);
    const other = Object.entries(p.load.byStatus)
      .filter(([c]) => !['202', '429', '503'].includes(c))
      .map(([c, v]) => `${c === '0' ? 'no answer' : c}: ${n0(v)}`);
    line(
      `  HTTP accepted          ${n0(p.acceptedEventsPerSec).padStart(9)} events/s   ${n0(p.requestsPerSec)} req/s; latency p50 ${n0(p.latencyMs.p50)} ms, p99 ${n0(p.latencyMs.p99)} ms, max ${n0(p.latencyMs.max)} ms`,
    );
    line(
      `                         responses 202: ${n0(p.load.byStatus[202] ?? 0)}, 429: ${n0(p.load.byStatus[429] ?? 0)}, 503: ${n0(p.load.byStatus[503] ?? 0)}${other.length ? `, ${other.join(', ')}` : ''}; events rejected in 202s: ${n0(p.load.eventsRejected)}`,
    );
    line(`  end to end             ${n0(p.endToEnd.eventsPerSec).padStart(9)} events/s   rows landing in ClickHouse (${n0(p.endToEnd.rows)} in the window)`);
    line(`  dedupe passed on       ${n0(p.dedupeEventsPerSec).padStart(9)} events/s   events.raw -> events.unique`);
    line(
      `  in-memory state        dedupe marks ${n0(p.state.dedupeMarks.start)} / ${n0(p.state.dedupeMarks.middle)} / ${n0(p.state.dedupeMarks.end)}; Redis used_memory ${n0(p.state.redisUsedMb.start)} / ${n0(p.state.redisUsedMb.middle)} / ${n0(p.state.redisUsedMb.end)} MB (start / middle / end)`,
    );
    line(`  backlog accepted-stored  start ${n0(p.backlog.start)}, middle ${n0(p.backlog.middle)}, end ${n0(p.backlog.end)}`);
    for (const g of ['dedupe', 'storage']) {
      line(
        `  lag ${g.padEnd(8)} (msgs)    start ${n0(p.lag.start[g])}, middle ${n0(p.lag.middle[g])}, end ${n0(p.lag.end[g])}, after drain ${n0(p.lag.afterDrain?.[g])}` +
          `   [processor gauge, up to 10 s old: ${n0(p.lagGauge.start[g])} / ${n0(p.lagGauge.middle[g])} / ${n0(p.lagGauge.end[g])} / ${n0(p.lagGauge.afterDrain?.[g])}]`,
      );
    }
    line(
      `  drain after the load   ${p.drain.drained ? `${n1(p.drain.seconds)} s until ClickHouse had every accepted event` : `${n0(p.drain.remaining)} events still missing after ${n0(p.drain.seconds)} s`}`,
    );
    for (const [table, i] of Object.entries(p.inserts)) {
      line(
        `  inserts into ${table.padEnd(9)} ${n1(i.insertsPerSec).padStart(9)} inserts/s  avg ${n0(i.avgBatchRows)} rows/insert, avg ${n1(i.avgInsertMs)} ms/insert, ${n0(i.rowsPerInsertSecond)} rows per insert-second`,
      );
      line(
        `                         rows per insert: ${
          i.batchRows
            .filter(([, c]) => c > 0)
            .map(([le, c]) => `<=${le}: ${n0(c)}`)
            .join(', ') || '-'
        }`,
      );
    }
    line(
      `  gateway                Kafka produce avg ${n1(p.gateway.kafkaProduceAvgMs)} ms (acks=all); event loop lag p99 gateway ${n0(p.gateway.eventLoopLagP99Ms)} ms, processor ${n0(p.processor.eventLoopLagP99Ms)} ms`,
    );
    line('\nResources during the window');
    line(
      `  ${'process'.padEnd(24)} ${'CPU s'.padStart(7)} ${'% core'.padStart(7)} ${'CPU s/1M ev'.padStart(12)}  ${'RSS start / middle / end'.padEnd(26)} peak RSS`,
    );
    for (const [name, f] of Object.entries(p.processes)) {
      const rss = f.rssMb.start === undefined ? '' : `${n0(f.rssMb.start)} / ${n0(f.rssMb.middle)} / ${n0(f.rssMb.end)} MB`;
      line(
        `  ${name.padEnd(24)} ${n1(f.cpuSeconds).padStart(7)} ${n0(f.cpuPercentOfCore).padStart(7)} ${`${n1(f.cpuSecondsPerMillionEvents)}${f.basis === 'stored' ? '*' : ''}`.padStart(12)}  ${rss.padEnd(26)} ${f.peakRssMb === undefined ? '' : `${n0(f.peakRssMb)} MB`}`,
      );
    }
    line(`  (* per 1M events stored, others per 1M events accepted)`);
    line(`  machine: ${n2(p.machine.coresBusy)} of ${p.machine.cores} cores busy; processes outside this table used ${n2(p.machine.otherCores)} cores`);
  }

  if (r.freshnessSkipped) line(`\nFreshness at half load: not measured; ${r.freshnessSkipped}`);
  const f = r.freshness;
  if (f) {
    line(`\nFreshness at half load (paced at ${n0(f.targetEventsPerSec)} events/s, achieved ${n0(f.achievedEventsPerSec)} over ${n0(f.seconds)} s)`);
    line(
      `  probes                 ${f.probes.sent} sent, ${f.probes.accepted} accepted, ${f.probes.seen} queryable, ${f.probes.missing} never seen within 30 s, ${f.probes.failed} refused/failed`,
    );
    line(
      `  accept -> queryable    p50 ${n0(f.latencyMs.p50)} ms, p90 ${n0(f.latencyMs.p90)} ms, p99 ${n0(f.latencyMs.p99)} ms, max ${n0(f.latencyMs.max)} ms  (send -> 202: p50 ${n0(f.acceptMs.p50)} ms, p99 ${n0(f.acceptMs.p99)} ms)`,
    );
    line(
      `  lag (msgs)             start dedupe ${n0(f.lag.start.dedupe)}, storage ${n0(f.lag.start.storage)}; end dedupe ${n0(f.lag.end.dedupe)}, storage ${n0(f.lag.end.storage)}`,
    );
  }

  const logs = Object.entries(r.serviceLogs ?? {});
  if (logs.length > 0) {
    line('\nService logs (warnings and errors during the run, LOG_LEVEL=warn)');
    for (const [name, entries] of logs) {
      if (entries.length === 0) line(`  ${name.padEnd(10)} none`);
      for (const e of entries.slice(0, 6)) line(`  ${name.padEnd(10)} ${String(e.count).padStart(5)} x ${e.level.padEnd(5)} ${e.message}`);
    }
  }

  for (const [name, prof] of Object.entries(r.profiles ?? {})) {
    line(`\nCPU profile of the ${name} (whole run, ${n1(prof.busySeconds)} s on its main thread; ${prof.file})`);
    line(`  by package: ${prof.byPackage.map((p) => `${p.name} ${n1(p.percent)}%`).join(', ')}`);
    for (const fn of prof.topFunctions) line(`  ${n1(fn.percent).padStart(5)}%  ${fn.name}`);
  }

  line('\nRatios');
  const ratio = (label: string, value: number | undefined) => line(`  ${label.padEnd(52)} ${value === undefined ? '-' : `${n1(value * 100)}%`}`);
  ratio('end-to-end events/s / Kafka raw producer records/s', r.ratios.endToEndVsKafkaProducer);
  ratio('writer rows/s / raw ClickHouse insert rows/s', r.ratios.writerVsClickHouseInsert);
  ratio('writer rows per insert-second / raw insert rows/s', r.ratios.writerInsertSpeedVsClickHouseInsert);
  ratio('gateway req/s / no-op fastify req/s', r.ratios.gatewayVsNoopFastify);

  line('\nTargets (from the issue)');
  for (const t of r.targets) line(`  ${t.verdict.padEnd(5)} ${t.name.padEnd(42)} ${t.measured}${t.note ? `  (${t.note})` : ''}`);
  for (const e of r.errors) line(`\nerror: ${e}`);
  return out.join('\n');
}

function perMillion(cpu: number | undefined, count: number): number | undefined {
  return cpu === undefined || count === 0 ? undefined : cpu / (count / 1e6);
}

function pct(cpu: number | undefined, seconds: number): number | undefined {
  return cpu === undefined ? undefined : (cpu / seconds) * 100;
}

export function writeResult(file: string, result: BenchResult): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
}

/** Turns the readings of the pipeline phase into the figures the report prints and saves. */
import { acceptedToStore, diffCounters, type LoadCounters } from './load.js';
import { gaugeLagByGroup, type Observation } from './observe.js';
import { cpuDelta } from './proc-stats.js';
import { delta, deltaBy, gaugeMs, histogramDelta, ratioMs, sum } from './prom.js';
import { percentile } from './say.js';
import type { SustainedReadings } from './sustained.js';

export interface TableInserts {
  inserts: number;
  insertsPerSec: number;
  rows: number;
  rowsPerSec: number;
  avgBatchRows: number;
  avgInsertMs: number;
  /** Rows per second of time spent inside inserts: the writer's own insert speed. */
  rowsPerInsertSecond: number;
  /** Inserts per batch-size bucket of the processor's histogram, e.g. ["500", 12] = 100 < rows <= 500. */
  batchRows: [string, number][];
}

export interface ProcessFigures {
  cpuSeconds?: number;
  /** Share of one core over the window. */
  cpuPercentOfCore?: number;
  cpuSecondsPerMillionEvents?: number;
  /** What the per-million figure divides by. */
  basis: 'accepted' | 'stored';
  rssMb: { start?: number; middle?: number; end?: number };
  peakRssMb?: number;
}

export interface LagAt {
  start: Record<string, number>;
  middle: Record<string, number>;
  end: Record<string, number>;
  afterDrain?: Record<string, number>;
}

export interface PipelineFigures {
  windowS: number;
  warmupS: number;
  load: LoadCounters;
  acceptedEventsPerSec: number;
  requestsPerSec: number;
  latencyMs: { p50?: number; p99?: number; max?: number };
  endToEnd: { rows: number; eventsPerSec: number };
  dedupeEventsPerSec: number;
  /** First-seen marks the processor holds in memory (ingest_dedupe_marks) and Redis used_memory. */
  state: {
    dedupeMarks: { start: number; middle: number; end: number };
    dedupePassed: number;
    redisUsedMb: { start?: number; middle?: number; end?: number };
  };
  backlog: { start: number; middle: number; end: number };
  /** Read from Kafka at each moment. */
  lag: LagAt;
  /** The processor's ingest_consumer_lag_messages gauge at the same moments (refreshed every 10 s). */
  lagGauge: LagAt;
  drain: { drained: boolean; seconds: number; remaining: number };
  inserts: Record<string, TableInserts>;
  gateway: { kafkaProduceAvgMs?: number; eventLoopLagP99Ms?: number };
  processor: { eventLoopLagP99Ms?: number };
  processes: Record<string, ProcessFigures>;
  machine: { coresBusy: number; otherCores: number; cores: number };
  timeline: { s: number; rows: number; accepted: number }[];
}

const STORED_BASIS = new Set(['processor', 'clickhouse']);

export function pipelineFigures(r: SustainedReadings, cores: number, groupPrefix: string): PipelineFigures {
  const { start, middle, end } = r;
  const windowS = (end.atMs - start.atMs) / 1000;
  const load = diffCounters(start.load, end.load);
  const rows = end.rows - start.rows;
  const backlog = (o: Observation) => acceptedToStore(o.load) - o.rows;
  return {
    windowS,
    warmupS: (start.atMs - r.warmupStartMs) / 1000,
    load,
    acceptedEventsPerSec: load.eventsAccepted / windowS,
    requestsPerSec: (load.byStatus[202] ?? 0) / windowS,
    latencyMs: { p50: percentile(r.latenciesMs, 50), p99: percentile(r.latenciesMs, 99), max: percentile(r.latenciesMs, 100) },
    endToEnd: { rows, eventsPerSec: rows / windowS },
    dedupeEventsPerSec: delta(start.processor, end.processor, 'ingest_dedupe_unique_events_total') / windowS,
    state: {
      dedupeMarks: {
        start: sum(start.processor, 'ingest_dedupe_marks'),
        middle: sum(middle.processor, 'ingest_dedupe_marks'),
        end: sum(end.processor, 'ingest_dedupe_marks'),
      },
      dedupePassed: delta(start.processor, end.processor, 'ingest_dedupe_unique_events_total'),
      redisUsedMb: { start: toMb(start.redisUsedMemory), middle: toMb(middle.redisUsedMemory), end: toMb(end.redisUsedMemory) },
    },
    backlog: { start: backlog(start), middle: backlog(middle), end: backlog(end) },
    lag: { start: start.lag, middle: middle.lag, end: end.lag, afterDrain: r.drain.afterDrain?.lag },
    lagGauge: {
      start: gaugeOf(start),
      middle: gaugeOf(middle),
      end: gaugeOf(end),
      afterDrain: r.drain.afterDrain ? gaugeOf(r.drain.afterDrain) : undefined,
    },
    drain: { drained: r.drain.drained, seconds: r.drain.seconds, remaining: r.drain.remaining },
    inserts: insertFigures(start, end, windowS),
    gateway: {
      kafkaProduceAvgMs: ratioMs(
        delta(start.gateway, end.gateway, 'ingest_kafka_produce_duration_seconds_sum'),
        delta(start.gateway, end.gateway, 'ingest_kafka_produce_duration_seconds_count'),
      ),
      eventLoopLagP99Ms: gaugeMs(end.gateway, 'nodejs_eventloop_lag_p99_seconds'),
    },
    processor: { eventLoopLagP99Ms: gaugeMs(end.processor, 'nodejs_eventloop_lag_p99_seconds') },
    processes: processFigures(start, middle, end, windowS, load.eventsAccepted, rows),
    machine: machineFigures(start, end, windowS, cores),
    timeline: r.timeline.map((t) => ({ s: Math.round((t.atMs - start.atMs) / 100) / 10, rows: t.rows, accepted: t.accepted })),
  };

  function gaugeOf(o: Observation) {
    return gaugeLagByGroup(o.processor, groupPrefix);
  }
}

function toMb(bytes: number | undefined): number | undefined {
  return bytes === undefined || !Number.isFinite(bytes) ? undefined : bytes / 1024 / 1024;
}

function insertFigures(start: Observation, end: Observation, windowS: number): Record<string, TableInserts> {
  const inserts = deltaBy(start.processor, end.processor, 'ingest_clickhouse_insert_duration_seconds_count', 'table');
  const seconds = deltaBy(start.processor, end.processor, 'ingest_clickhouse_insert_duration_seconds_sum', 'table');
  const rows = deltaBy(start.processor, end.processor, 'ingest_clickhouse_rows_inserted_total', 'table');
  const batchSum = deltaBy(start.processor, end.processor, 'ingest_clickhouse_batch_rows_sum', 'table');
  const batchCount = deltaBy(start.processor, end.processor, 'ingest_clickhouse_batch_rows_count', 'table');
  const out: Record<string, TableInserts> = {};
  for (const table of Object.keys(inserts)) {
    const n = inserts[table] ?? 0;
    const s = seconds[table] ?? 0;
    const r = rows[table] ?? 0;
    out[table] = {
      inserts: n,
      insertsPerSec: n / windowS,
      rows: r,
      rowsPerSec: r / windowS,
      avgBatchRows: (batchSum[table] ?? 0) / Math.max(1, batchCount[table] ?? 0),
      avgInsertMs: (s / Math.max(1, n)) * 1000,
      rowsPerInsertSecond: s > 0 ? r / s : 0,
      batchRows: histogramDelta(start.processor, end.processor, 'ingest_clickhouse_batch_rows', { table }),
    };
  }
  return out;
}

function processFigures(start: Observation, middle: Observation, end: Observation, windowS: number, accepted: number, stored: number) {
  const out: Record<string, ProcessFigures> = {};
  const mb = (o: Observation, name: string) => {
    const m = o.proc.memory[name];
    return m ? m.rssBytes / 1024 / 1024 : undefined;
  };
  for (const name of Object.keys(end.proc.cpu)) {
    const cpu = cpuDelta(start.proc, end.proc, name);
    const basis = STORED_BASIS.has(name) ? 'stored' : 'accepted';
    const events = basis === 'stored' ? stored : accepted;
    const peak = end.proc.memory[name]?.peakRssBytes;
    out[name] = {
      cpuSeconds: cpu,
      cpuPercentOfCore: cpu === undefined ? undefined : (cpu / windowS) * 100,
      cpuSecondsPerMillionEvents: cpu === undefined || events === 0 ? undefined : cpu / (events / 1e6),
      basis,
      rssMb: { start: mb(start, name), middle: mb(middle, name), end: mb(end, name) },
      peakRssMb: peak === undefined ? undefined : peak / 1024 / 1024,
    };
  }
  const self = end.proc.selfCpu - start.proc.selfCpu;
  out['bench (load generator)'] = {
    cpuSeconds: self,
    cpuPercentOfCore: (self / windowS) * 100,
    cpuSecondsPerMillionEvents: accepted === 0 ? undefined : self / (accepted / 1e6),
    basis: 'accepted',
    rssMb: {},
  };
  return out;
}

function machineFigures(start: Observation, end: Observation, windowS: number, cores: number) {
  const busy = end.proc.machine.busy - start.proc.machine.busy;
  let known = end.proc.selfCpu - start.proc.selfCpu;
  for (const name of Object.keys(end.proc.cpu)) known += cpuDelta(start.proc, end.proc, name) ?? 0;
  return { coresBusy: busy / windowS, otherCores: Math.max(0, busy - known) / windowS, cores };
}

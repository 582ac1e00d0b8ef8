/**
 * Raw baselines measured in the same run as the pipeline: what Kafka takes from its own Java
 * producer, what ClickHouse takes in 10,000-row inserts (JSONEachRow rows, see json-event-row.ts),
 * and what fastify answers with a route that does nothing.
 */
import { join } from 'node:path';
import type { ClickHouse } from '@ingest/platform';
import { toEventRow } from './json-event-row.js';
import type { Cleanup } from './cleanup.js';
import { type BodyFactory, sampleRecord } from './events.js';
import { freePort } from '@ingest/testkit';
import { createHttpClient } from './http-client.js';
import { diffCounters, singleAccountSource, startLoad } from './load.js';
import { cpuSeconds } from './proc-stats.js';
import { sleep, spawnChild, waitUntilReady } from './processes.js';
import { n0, percentile, say } from './say.js';

export interface KafkaBaseline {
  records: number;
  recordSize: number;
  recordsPerSec: number;
  mbPerSec: number;
  avgLatencyMs: number;
  p50LatencyMs?: number;
  p99LatencyMs?: number;
  brokerCpuSeconds?: number;
  summary: string;
}

const FINAL_LINE = /^(\d+) records sent, ([\d.]+) records\/sec \(([\d.]+) MB\/sec\), ([\d.]+) ms avg latency/;
const PERCENTILES = /([\d.]+) ms 50th, [\d.]+ ms 95th, ([\d.]+) ms 99th/;

export async function kafkaProducerBaseline(ctx: {
  stackDir: string;
  brokers: string;
  topic: string;
  records: number;
  recordSize: number;
  logDir: string;
  brokerPid?: number;
  cwd: string;
  cleanup: Cleanup;
  onSpawn?: (pid: number) => void;
}): Promise<KafkaBaseline> {
  const lines: string[] = [];
  const cpuBefore = ctx.brokerPid === undefined ? undefined : cpuSeconds(ctx.brokerPid);
  const child = spawnChild({
    name: 'kafka-producer-perf',
    command: 'java',
    args: [
      '-cp',
      join(ctx.stackDir, 'kafka', 'libs', '*'),
      'org.apache.kafka.tools.ProducerPerformance',
      '--topic',
      ctx.topic,
      '--num-records',
      String(ctx.records),
      '--record-size',
      String(ctx.recordSize),
      '--throughput',
      '-1',
      '--producer-props',
      `bootstrap.servers=${ctx.brokers}`,
      'acks=all',
    ],
    env: process.env,
    cwd: ctx.cwd,
    logFile: join(ctx.logDir, 'kafka-producer-perf.log'),
    onLine: (line) => {
      lines.push(line);
      if (/records sent/.test(line)) say('kafka', line.split(',').slice(0, 3).join(','));
    },
  });
  ctx.onSpawn?.(child.pid);
  ctx.cleanup.add('stop kafka-producer-perf', () => child.stop(5_000));
  const onAbort = () => void child.stop(5_000);
  ctx.cleanup.signal.addEventListener('abort', onAbort, { once: true });
  const code = await child.exited;
  ctx.cleanup.signal.removeEventListener('abort', onAbort);
  const cpuAfter = ctx.brokerPid === undefined ? undefined : cpuSeconds(ctx.brokerPid);
  const summary = [...lines].reverse().find((l) => FINAL_LINE.test(l) && PERCENTILES.test(l));
  if (code !== 0 || !summary) throw new Error(`ProducerPerformance ended with ${code} without a summary; see ${child.logFile}`);
  const m = FINAL_LINE.exec(summary);
  const p = PERCENTILES.exec(summary);
  return {
    records: Number(m?.[1]),
    recordSize: ctx.recordSize,
    recordsPerSec: Number(m?.[2]),
    mbPerSec: Number(m?.[3]),
    avgLatencyMs: Number(m?.[4]),
    p50LatencyMs: p ? Number(p[1]) : undefined,
    p99LatencyMs: p ? Number(p[2]) : undefined,
    brokerCpuSeconds: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore,
    summary,
  };
}

export interface ClickHouseBaseline {
  rows: number;
  batchRows: number;
  inserts: number;
  insertSeconds: number;
  rowsPerSec: number;
  insertMs: { avg: number; p50?: number; max?: number };
  clickhouseCpuSeconds?: number;
}

/**
 * Sequential inserts of `batchRows` rows shaped by the writer's former JSONEachRow row builder
 * (json-event-row.ts). Only the insert calls are timed. The writer's target (>= 70% of this) is
 * stated relative to this baseline, so it stays until that target is restated: the writer's own
 * TabSeparated lines insert faster here (296k against 176k rows/s, two runs on 2026-11-27).
 */
export async function clickhouseInsertBaseline(ctx: {
  ch: ClickHouse;
  rows: number;
  batchRows: number;
  accountId: string;
  runId: string;
  eventBytes: number;
  clickhousePid?: number;
  signal: AbortSignal;
}): Promise<ClickHouseBaseline> {
  const durations: number[] = [];
  let inserted = 0;
  let cpu = 0;
  let lastSay = Date.now();
  while (inserted < ctx.rows && !ctx.signal.aborted) {
    const now = Date.now();
    const count = Math.min(ctx.batchRows, ctx.rows - inserted);
    const rows = Array.from({ length: count }, (_, i) => toEventRow(sampleRecord(ctx.accountId, `${ctx.runId}-ch`, inserted + i, ctx.eventBytes, now), now));
    const cpuBefore = ctx.clickhousePid === undefined ? undefined : cpuSeconds(ctx.clickhousePid);
    const started = performance.now();
    await ctx.ch.insert('events', rows);
    durations.push(performance.now() - started);
    const cpuAfter = ctx.clickhousePid === undefined ? undefined : cpuSeconds(ctx.clickhousePid);
    if (cpuBefore !== undefined && cpuAfter !== undefined) cpu += cpuAfter - cpuBefore;
    inserted += count;
    if (Date.now() - lastSay > 3_000) {
      lastSay = Date.now();
      say('clickhouse', `${n0(inserted)} / ${n0(ctx.rows)} rows inserted`);
    }
  }
  const insertSeconds = durations.reduce((a, b) => a + b, 0) / 1000;
  return {
    rows: inserted,
    batchRows: ctx.batchRows,
    inserts: durations.length,
    insertSeconds,
    rowsPerSec: inserted / insertSeconds,
    insertMs: { avg: (insertSeconds * 1000) / Math.max(1, durations.length), p50: percentile(durations, 50), max: percentile(durations, 100) },
    clickhouseCpuSeconds: ctx.clickhousePid === undefined ? undefined : cpu,
  };
}

export interface NoopBaseline {
  seconds: number;
  requestsPerSec: number;
  eventsPerSec: number;
  latencyMs: { p50?: number; p99?: number };
  serverCpuSeconds?: number;
  loadGeneratorCpuSeconds: number;
  byStatus: Record<number, number>;
}

/** The same load generator and bodies against a fastify route that does nothing. */
export async function noopFastifyBaseline(ctx: {
  cwd: string;
  logDir: string;
  durationS: number;
  concurrency: number;
  eventsPerRequest: number;
  bodies: BodyFactory;
  localAddress: string;
  cleanup: Cleanup;
  onSpawn?: (pid: number) => void;
}): Promise<NoopBaseline> {
  const port = await freePort();
  const child = spawnChild({
    name: 'noop-fastify',
    command: process.execPath,
    args: ['--import', 'tsx', 'bench/src/noop-server.ts', String(port)],
    env: process.env,
    cwd: ctx.cwd,
    logFile: join(ctx.logDir, 'noop-fastify.log'),
  });
  ctx.onSpawn?.(child.pid);
  ctx.cleanup.add('stop noop-fastify', () => child.stop(5_000));
  const url = `http://127.0.0.1:${port}`;
  const client = createHttpClient(url, { localAddress: ctx.localAddress, maxSockets: ctx.concurrency });
  try {
    await waitUntilReady(child, `${url}/readyz`, 30_000);
    const load = startLoad({
      client,
      path: '/v1/events',
      concurrency: ctx.concurrency,
      source: singleAccountSource(ctx.bodies, 'none', ctx.eventsPerRequest),
    });
    await sleep(2_000, ctx.cleanup.signal);
    const before = { counters: load.counters(), at: Date.now(), cpu: cpuSeconds(child.pid), self: process.cpuUsage() };
    await sleep(ctx.durationS * 1000, ctx.cleanup.signal);
    const after = { counters: load.counters(), at: Date.now(), cpu: cpuSeconds(child.pid), self: process.cpuUsage(before.self) };
    await load.stop();
    const d = diffCounters(before.counters, after.counters);
    const seconds = (after.at - before.at) / 1000;
    const latencies = load.latenciesSince(before.at, after.at);
    return {
      seconds,
      requestsPerSec: (d.byStatus[202] ?? 0) / seconds,
      eventsPerSec: d.eventsAccepted / seconds,
      latencyMs: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
      serverCpuSeconds: before.cpu === undefined || after.cpu === undefined ? undefined : after.cpu - before.cpu,
      loadGeneratorCpuSeconds: (after.self.user + after.self.system) / 1e6,
      byStatus: d.byStatus,
    };
  } finally {
    client.close();
    await child.stop(5_000);
  }
}

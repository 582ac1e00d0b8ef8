/**
 * One reading of everything the bench watches: the load generator's counters, the rows in
 * ClickHouse, both services' /metrics and the processes' CPU and memory. A phase's figures are
 * differences between two readings.
 */
import { type ClickHouse, createLagCollector, createMetricsRegistry, type KafkaClient, type LagCollector, type Logger } from '@ingest/platform';
import type { LoadCounters, LoadGenerator } from './load.js';
import { type Pids, procSnapshot, type ProcSnapshot } from './proc-stats.js';
import { type Samples, scrapeOrEmpty, sumBy } from './prom.js';

export interface Observer {
  ch: ClickHouse;
  /** Rows of the load's account(s) in ClickHouse (duplicates included). */
  countRows(): Promise<number>;
  gatewayOpsUrl: string;
  processorOpsUrl: string;
  pids: Pids;
  groupPrefix: string;
  /** Lag read from Kafka at the moment of each observation (the processor's gauge is up to 10 s old). */
  lag: LagReader;
  /** Redis `used_memory` (the allowance keeps every event id for 10-20 minutes). */
  redisUsedMemory(): Promise<number | undefined>;
}

export interface Observation {
  atMs: number;
  load: LoadCounters;
  rows: number;
  gateway: Samples;
  processor: Samples;
  proc: ProcSnapshot;
  /** Messages not yet committed per group (`dedupe`, `storage`), read now. */
  lag: Record<string, number>;
  redisUsedMemory?: number;
}

/**
 * The load counters and /proc are read at `atMs`; rows, lag and metrics are asked for at the same
 * moment and arrive within milliseconds, except /metrics of a service whose event loop is busy.
 */
export async function observe(o: Observer, load: LoadGenerator): Promise<Observation> {
  const atMs = Date.now();
  const counters = load.counters();
  const proc = procSnapshot(o.pids);
  const [rows, gateway, processor, lag, redisUsedMemory] = await Promise.all([
    o.countRows(),
    scrapeOrEmpty(`${o.gatewayOpsUrl}/metrics`),
    scrapeOrEmpty(`${o.processorOpsUrl}/metrics`),
    o.lag.read(),
    o.redisUsedMemory().catch(() => undefined),
  ]);
  return { atMs, load: counters, rows, gateway, processor, proc, lag, redisUsedMemory };
}

export interface LagReader {
  read(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

/**
 * The processor's own lag computation (`createLagCollector`, which feeds its
 * ingest_consumer_lag_messages gauge), run by the bench on demand so a reading is current.
 */
export function createLagReader(kafka: KafkaClient, logger: Logger, groups: Record<string, { groupId: string; topic: string }>): LagReader {
  const registry = createMetricsRegistry('bench');
  const collectors: [string, LagCollector][] = Object.entries(groups).map(([name, g]) => [
    name,
    createLagCollector({ kafka, groupId: g.groupId, topics: [g.topic], registry, logger }),
  ]);
  return {
    async read() {
      const out: Record<string, number> = {};
      await Promise.all(
        collectors.map(async ([name, c]) => {
          const lags = await c.collect();
          if (lags) out[name] = lags.reduce((sum, l) => sum + Number(l.lag), 0);
        }),
      );
      return out;
    },
    async close() {
      await Promise.all(collectors.map(([, c]) => c.stop()));
    },
  };
}

/**
 * Consumer lag per group (`dedupe`, `storage`, `jobs`) from the processor's gauge. The
 * processor refreshes it every 10 s, so a reading can be that old.
 */
export function gaugeLagByGroup(processor: Samples, groupPrefix: string): Record<string, number> {
  const byGroup = sumBy(processor, 'ingest_consumer_lag_messages', 'group');
  return Object.fromEntries(Object.entries(byGroup).map(([g, v]) => [g.startsWith(groupPrefix) ? g.slice(groupPrefix.length) : g, v]));
}

export function formatLag(lag: Record<string, number>): string {
  const parts = ['dedupe', 'storage'].map((g) => `${g} ${lag[g] === undefined ? '-' : new Intl.NumberFormat('en-US').format(lag[g])}`);
  return parts.join(', ');
}

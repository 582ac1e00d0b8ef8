import { Gauge } from 'prom-client';
import type { Component } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import { METRIC_NAMES, type Registry } from '../metrics.js';
import type { KafkaAdmin, KafkaClient } from './driver.js';

export interface PartitionLag {
  topic: string;
  partition: number;
  /** Next offset the group will read, or null when it has committed nothing for the partition. */
  committed: bigint | null;
  low: bigint;
  high: bigint;
  lag: bigint;
}

/**
 * Messages a group still has to read in one partition. A group that committed nothing (or
 * whose offset fell out of retention) starts at the earliest offset still in the log, since
 * our consumers subscribe from the beginning, so everything still there counts.
 */
export function partitionLag(committed: string, low: bigint, high: bigint): bigint {
  const position = /^\d+$/.test(committed) ? BigInt(committed) : -1n;
  const start = position < low ? low : position;
  return high > start ? high - start : 0n;
}

export interface LagCollectorOptions {
  kafka: KafkaClient;
  groupId: string;
  topics: readonly string[];
  registry: Registry;
  logger: Logger;
  /** Default 10 s. */
  intervalMs?: number;
}

export interface LagCollector extends Component {
  /** Reads the offsets now and updates the gauge; resolves undefined (and logs) when Kafka did not answer. */
  collect(): Promise<PartitionLag[] | undefined>;
}

type LagLabels = 'group' | 'topic' | 'partition';

/**
 * `ingest_consumer_lag_messages{group, topic, partition}`: end offset minus committed offset,
 * read with the admin API every `intervalMs`. It watches a group from outside, so it works the
 * same for a group with no live member (the lag then grows, which is the point of the alert).
 * A failed read is logged at warn and leaves the last values in place; it never stops the
 * service, and the collector stays healthy (lag is an observation, not a readiness condition).
 */
export function createLagCollector(options: LagCollectorOptions): LagCollector {
  const log = options.logger.child({ component: 'lag-collector', groupId: options.groupId });
  const intervalMs = options.intervalMs ?? 10_000;
  // Several collectors (one per group) share one registry and so one gauge.
  const gauge =
    (options.registry.getSingleMetric(METRIC_NAMES.consumerLag) as Gauge<LagLabels> | undefined) ??
    new Gauge<LagLabels>({
      name: METRIC_NAMES.consumerLag,
      help: 'Messages a consumer group has not committed yet, per partition (end offset minus committed offset)',
      labelNames: ['group', 'topic', 'partition'],
      registers: [options.registry],
    });
  const published = new Map<string, Record<LagLabels, string>>();
  let admin: KafkaAdmin | undefined;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<PartitionLag[] | undefined> | undefined;

  async function read(): Promise<PartitionLag[]> {
    if (!admin) {
      const fresh = options.kafka.admin();
      await fresh.connect();
      admin = fresh;
    }
    const connected = admin;
    const [committed, ends] = await Promise.all([
      connected.committedOffsets(options.groupId, options.topics),
      Promise.all(options.topics.map((topic) => connected.topicOffsets(topic))),
    ]);
    const committedOf = new Map(committed.map((p) => [`${p.topic}/${p.partition}`, p.offset] as const));
    return ends.flat().map((p) => {
      const offset = committedOf.get(`${p.topic}/${p.partition}`) ?? '-1';
      return {
        topic: p.topic,
        partition: p.partition,
        committed: /^\d+$/.test(offset) ? BigInt(offset) : null,
        low: p.low,
        high: p.high,
        lag: partitionLag(offset, p.low, p.high),
      };
    });
  }

  async function collectOnce(): Promise<PartitionLag[] | undefined> {
    try {
      const lags = await read();
      for (const l of lags) {
        const labels = { group: options.groupId, topic: l.topic, partition: String(l.partition) };
        gauge.set(labels, Number(l.lag));
        published.set(`${l.topic}/${l.partition}`, labels);
      }
      return lags;
    } catch (err) {
      log.warn({ err }, 'could not read consumer lag');
      // A fresh admin next time: the old one may hold a dead connection.
      const broken = admin;
      admin = undefined;
      await broken?.disconnect().catch(() => {});
      return undefined;
    }
  }

  const collector: LagCollector = {
    name: `lag-collector:${options.groupId}`,
    collect() {
      inFlight ??= collectOnce().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    async start() {
      // Not awaited: Kafka being away at start must not hold or fail the service's start.
      void collector.collect();
      timer = setInterval(() => void collector.collect(), intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await inFlight;
      for (const labels of published.values()) gauge.remove(labels);
      published.clear();
      const connected = admin;
      admin = undefined;
      await connected?.disconnect().catch((err: unknown) => log.warn({ err }, 'lag collector admin did not disconnect cleanly'));
    },
    healthy: () => true,
  };
  return collector;
}

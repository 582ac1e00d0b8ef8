import { Gauge } from 'prom-client';
import type { Component } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import { METRIC_NAMES, type Registry } from '../metrics.js';
import type { KafkaAdmin, KafkaClient } from './driver.js';

/** How /readyz names the check (docs/scale.md, "A broker that never comes back"). */
export const BROKERS_PART = 'kafka-brokers';
/** At most this many missing broker ids are named, so the /readyz body stays small whatever the cluster. */
const MISSING_LISTED = 5;

export interface BrokerSettings {
  /** KAFKA_REPLICATION_FACTOR: every topic has this many replicas, so the cluster has at least this many brokers. */
  replicationFactor: number;
  /** KAFKA_MIN_INSYNC_REPLICAS: fewer live brokers than this and no write with acks=all can succeed. */
  minInsyncReplicas: number;
}

export interface BrokerVerdict {
  /** `ok`: every expected broker is live; `degraded`: some are missing but writes go on; `unavailable`: too few for acks=all. */
  status: 'ok' | 'degraded' | 'unavailable';
  live: number;
  expected: number;
  /** The ids of the missing brokers that were seen live since the service started (not all, when it started during the loss). */
  missing: number[];
}

/**
 * What the brokers the service knows of tell: the most brokers seen live at once since it started
 * (their ids, for naming the missing ones), and at least the replication factor.
 */
export interface BrokerMemory {
  mostSeen: number;
  ids: ReadonlySet<number>;
}

export const NO_BROKERS_SEEN: BrokerMemory = { mostSeen: 0, ids: new Set() };

/**
 * The rule. "Expected" is the larger of the replication factor and the most brokers seen live at
 * once since the service started: the replication factor alone would miss a lost broker of a
 * cluster bigger than it (one of five with replication 3), the most seen alone would miss one
 * lost before the service started. The ids remembered are those of the last time the cluster
 * was at that size, so a broker replaced by one with a new id is forgotten once the cluster is
 * whole again; a cluster made smaller for good stays `degraded` until the services restart.
 */
export function judgeBrokers(liveIds: readonly number[], memory: BrokerMemory, settings: BrokerSettings): { verdict: BrokerVerdict; memory: BrokerMemory } {
  const live = new Set(liveIds);
  const next = live.size >= memory.mostSeen ? { mostSeen: live.size, ids: live } : memory;
  const expected = Math.max(settings.replicationFactor, next.mostSeen);
  const missing = [...next.ids].filter((id) => !live.has(id)).sort((a, b) => a - b);
  const status = live.size < settings.minInsyncReplicas ? 'unavailable' : live.size < expected ? 'degraded' : 'ok';
  return { verdict: { status, live: live.size, expected, missing }, memory: next };
}

/** The verdict as /readyz says it: one line with the cause, bounded whatever the cluster's size. */
export function describeBrokers(verdict: BrokerVerdict, settings: BrokerSettings): string {
  const shown = verdict.missing.slice(0, MISSING_LISTED).join(', ');
  const more = verdict.missing.length > MISSING_LISTED ? ` and ${verdict.missing.length - MISSING_LISTED} more` : '';
  const which = verdict.missing.length > 0 ? `missing broker ${shown}${more}` : 'missing brokers not seen since this service started';
  const effect =
    verdict.status === 'unavailable'
      ? `fewer than KAFKA_MIN_INSYNC_REPLICAS=${settings.minInsyncReplicas}: writes fail`
      : `at least KAFKA_MIN_INSYNC_REPLICAS=${settings.minInsyncReplicas}: writes go on`;
  return `${BROKERS_PART}: ${verdict.live} of ${verdict.expected} live (${which}; ${effect})`;
}

export interface BrokerWatchOptions extends BrokerSettings {
  kafka: KafkaClient;
  registry: Registry;
  logger: Logger;
  /** Default 5 s: with the cluster's 6 s broker session, a lost broker shows within about 11 s. */
  intervalMs?: number;
}

export interface BrokerWatch extends Component {
  /** Reads the live brokers now; resolves the verdict, or undefined (logged) when Kafka did not answer. */
  check(): Promise<BrokerVerdict | undefined>;
  /** The last verdict (undefined before the first answer). */
  verdict(): BrokerVerdict | undefined;
  /** The /readyz line while brokers are missing but writes go on (the service stays ready). */
  degraded(): string[];
  /** The /readyz line while too few brokers are live for acks=all (the service is not ready). */
  waitingFor(): string[];
}

/**
 * Every service's view of the Kafka cluster's brokers, for /readyz and `ingest_kafka_brokers`.
 * A lost broker of three (replication 3, min.insync 2) leaves every partition writable: the
 * service stays ready (taking every gateway out of its load balancer for lost redundancy would
 * turn it into an outage) and /readyz says `degraded` with the missing broker. Fewer live
 * brokers than min.insync.replicas: no acks=all write can succeed, and the service is not ready.
 * A failed read (Kafka away altogether) keeps the last verdict: the producer's own readiness
 * says that case (`kafka-producer`).
 */
export function createBrokerWatch(options: BrokerWatchOptions): BrokerWatch {
  const log = options.logger.child({ component: 'broker-watch' });
  const intervalMs = options.intervalMs ?? 5_000;
  const gauge =
    (options.registry.getSingleMetric(METRIC_NAMES.kafkaBrokers) as Gauge | undefined) ??
    new Gauge({
      name: METRIC_NAMES.kafkaBrokers,
      help: 'Brokers the Kafka cluster reports as live (fewer than before: a broker is down and its partitions are under-replicated)',
      registers: [options.registry],
    });
  let memory = NO_BROKERS_SEEN;
  let last: BrokerVerdict | undefined;
  let admin: KafkaAdmin | undefined;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<BrokerVerdict | undefined> | undefined;

  async function checkOnce(): Promise<BrokerVerdict | undefined> {
    try {
      if (!admin) {
        const fresh = options.kafka.admin();
        await fresh.connect();
        admin = fresh;
      }
      const ids = await admin.brokerIds();
      const judged = judgeBrokers(ids, memory, options);
      if (judged.verdict.status !== (last?.status ?? 'ok') || judged.verdict.live !== last?.live) {
        const line = judged.verdict.status === 'ok' ? 'kafka brokers all live' : describeBrokers(judged.verdict, options);
        log[judged.verdict.status === 'ok' ? 'info' : 'warn']({ ...judged.verdict }, line);
      }
      memory = judged.memory;
      last = judged.verdict;
      gauge.set(ids.length);
      return last;
    } catch (err) {
      log.warn({ err }, 'could not read the live kafka brokers');
      const broken = admin;
      admin = undefined;
      await broken?.disconnect().catch(() => {});
      return undefined;
    }
  }

  const watch: BrokerWatch = {
    name: BROKERS_PART,
    check() {
      inFlight ??= checkOnce().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    verdict: () => last,
    degraded: () => (last?.status === 'degraded' ? [describeBrokers(last, options)] : []),
    async start() {
      // Not awaited: Kafka being away at start must not hold the service's start.
      void watch.check();
      timer = setInterval(() => void watch.check(), intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await inFlight;
      const connected = admin;
      admin = undefined;
      await connected?.disconnect().catch((err: unknown) => log.warn({ err }, 'broker watch admin did not disconnect cleanly'));
    },
    healthy: () => last?.status !== 'unavailable',
    waitingFor: () => (last?.status === 'unavailable' ? [describeBrokers(last, options)] : []),
  };
  return watch;
}

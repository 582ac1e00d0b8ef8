import { Gauge } from 'prom-client';
import type { Component } from '../lifecycle.js';
import type { Logger } from '../logger.js';
import { METRIC_NAMES, type Registry } from '../metrics.js';
import { type ClickHouse, clickHouseUrls, createClickHouse } from './client.js';
import {
  describeReplica,
  judgeReplica,
  judgeUnanswered,
  type QueueFailureRow,
  REPLICA_CAUSES,
  REPLICA_PART,
  type ReplicaTableRow,
  type ReplicaVerdict,
  replicaName,
} from './replica-health.js';
import { sql } from './sql.js';

/** At most this many failing queue entries are read per replica and check. */
const FAILURES_READ = 50;

export interface ReplicaWatchOptions {
  /** CLICKHOUSE_URL: the watch runs only when it names several servers (replicaWatchWanted). */
  url: string;
  username?: string;
  password?: string;
  /** The service's database: only its tables are judged (other databases are not this service's). */
  database: string;
  registry: Registry;
  logger: Logger;
  /** Default 10 s. */
  intervalMs?: number;
  /** Each query's deadline; default 3 s, so a hung server is named within one interval. */
  queryTimeoutMs?: number;
  /** One server's client (tests give fakes). */
  connect?: (url: string) => ClickHouse;
}

export interface ReplicaWatch extends Component {
  /** Asks every server now (joins a check already running); resolves their verdicts. */
  check(): Promise<ReplicaVerdict[]>;
  /** The last verdicts (empty before the first check). */
  verdicts(): ReplicaVerdict[];
  /** /readyz lines of the unhealthy replicas: the service stays ready, its writer uses the others. */
  degraded(): string[];
}

/** Whether a CLICKHOUSE_URL names several servers: one server's trouble is the writer's own failure (its /readyz). */
export function replicaWatchWanted(url: string): boolean {
  return clickHouseUrls(url).length > 1;
}

/**
 * Every ~10 s, each server of CLICKHOUSE_URL is asked for its own replication health
 * (`system.replicas`, `system.replication_queue` of the service's database), in parallel, each
 * query bounded, never two checks at once. Unhealthy replicas are /readyz `degraded` lines and
 * `ingest_clickhouse_replica_unhealthy{replica,cause}` = 1 (the alert's input); both clear at
 * the first check that finds the queue free of failing entries.
 */
export function createReplicaWatch(options: ReplicaWatchOptions): ReplicaWatch {
  const log = options.logger.child({ component: 'replica-watch' });
  const intervalMs = options.intervalMs ?? 10_000;
  const connect =
    options.connect ??
    ((url: string) =>
      createClickHouse({
        url,
        ...(options.username !== undefined ? { username: options.username } : {}),
        ...(options.password !== undefined ? { password: options.password } : {}),
        database: options.database,
        requestTimeoutMs: options.queryTimeoutMs ?? 3_000,
        quiet: true,
      }));
  const servers = clickHouseUrls(options.url).map((url) => ({ name: replicaName(url), client: connect(url) }));
  const gauge = new Gauge({
    name: METRIC_NAMES.clickhouseReplicaUnhealthy,
    help: 'Whether a ClickHouse server of CLICKHOUSE_URL has a replication problem now, by cause (disk_full, zookeeper, unreachable, other)',
    labelNames: ['replica', 'cause'],
    registers: [options.registry],
  });
  const setGauge = (verdict: ReplicaVerdict) => {
    for (const cause of REPLICA_CAUSES) gauge.set({ replica: verdict.replica, cause }, cause === verdict.cause ? 1 : 0);
  };
  // Zero series from the start, so the alert sees the first change.
  for (const s of servers) setGauge({ replica: s.name, detail: '' });
  let last: ReplicaVerdict[] = [];
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<ReplicaVerdict[]> | undefined;

  async function judge(server: (typeof servers)[number]): Promise<ReplicaVerdict> {
    try {
      const db = options.database;
      const [tables, failures] = await Promise.all([
        server.client.query<ReplicaTableRow>(
          sql`SELECT table, is_readonly, is_session_expired, queue_size, absolute_delay FROM system.replicas WHERE database = ${db}`,
        ),
        server.client.query<QueueFailureRow>(
          sql`SELECT table, num_tries, last_exception FROM system.replication_queue WHERE database = ${db} AND last_exception != '' ORDER BY num_tries DESC LIMIT ${FAILURES_READ}`,
        ),
      ]);
      return judgeReplica(server.name, tables, failures);
    } catch (err) {
      return judgeUnanswered(server.name, err);
    }
  }

  async function checkOnce(): Promise<ReplicaVerdict[]> {
    const verdicts = await Promise.all(servers.map(judge));
    for (const v of verdicts) {
      const before = last.find((b) => b.replica === v.replica);
      if (before?.cause !== v.cause) {
        if (v.cause) log.warn({ replica: v.replica, cause: v.cause }, describeReplica(v));
        else if (before) log.info({ replica: v.replica }, `${REPLICA_PART} ${v.replica}: replication healthy again`);
      }
      setGauge(v);
    }
    last = verdicts;
    return verdicts;
  }

  const watch: ReplicaWatch = {
    name: REPLICA_PART,
    check() {
      inFlight ??= checkOnce().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    verdicts: () => last,
    degraded: () => last.filter((v) => v.cause !== undefined).map(describeReplica),
    async start() {
      // Not awaited: a replica away at start must not hold the service's start.
      void watch.check();
      timer = setInterval(() => void watch.check(), intervalMs);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      await inFlight;
      await Promise.all(
        servers.map((s) => s.client.close().catch((err: unknown) => log.warn({ err, replica: s.name }, 'replica watch client did not close cleanly'))),
      );
    },
    // The writer's readiness speaks for ClickHouse as a whole; a replica's trouble is `degraded`.
    healthy: () => true,
  };
  return watch;
}

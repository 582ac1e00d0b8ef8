import {
  AppError,
  CLICKHOUSE_FAILURE_CAUSES,
  type ClickHouse,
  type ClickHouseFailureCause,
  clickHouseFailureCause,
  errorMessage,
  isRetryable,
  type Logger,
  METRIC_NAMES,
  type Registry,
} from '@ingest/platform';
import { Counter, Gauge, Histogram } from 'prom-client';

export interface WriteContext {
  heartbeat(): Promise<void>;
  shouldContinue(): boolean;
}

export interface ClickHouseWriter {
  /**
   * Resolves once ClickHouse has the rows. While ClickHouse is unavailable it waits and retries
   * (backoff capped at `maxBackoffMs`), heartbeating so the consumer keeps its partitions; it
   * gives up only when the consumer is stopping, so events wait in Kafka instead of being lost.
   */
  write(lines: readonly string[], ctx: WriteContext): Promise<void>;
  /** While inserts keep failing: since when, why (the last failure), and its message. */
  failing?(): { sinceMs: number; cause: ClickHouseFailureCause; detail: string } | undefined;
}

export interface ClickHouseWriterDeps {
  ch: ClickHouse;
  table: string;
  /**
   * Rows come as TabSeparated lines of these columns, or of the columns this function tells from
   * the lines (eventsRowFormatOfLine for `events`, whose two shapes have different columns).
   */
  columns: readonly string[] | ((lines: readonly string[]) => readonly string[]);
  /** Told of an insert ClickHouse refused (not retried), before the error is thrown. */
  onRejected?: (err: unknown) => Promise<unknown>;
  logger: Logger;
  metrics: Registry;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export function createClickHouseWriter(deps: ClickHouseWriterDeps): ClickHouseWriter {
  const { ch, table, logger } = deps;
  const initialBackoffMs = deps.initialBackoffMs ?? 200;
  const maxBackoffMs = deps.maxBackoffMs ?? 5_000;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));

  const rowsInserted = new Counter({
    name: METRIC_NAMES.clickhouseRowsInserted,
    help: 'Rows inserted into ClickHouse',
    labelNames: ['table'],
    registers: [deps.metrics],
  });
  const failures = new Counter({
    name: METRIC_NAMES.clickhouseInsertFailures,
    help: 'Failed ClickHouse insert attempts',
    labelNames: ['table', 'retryable'],
    registers: [deps.metrics],
  });
  const duration = new Histogram({
    name: METRIC_NAMES.clickhouseInsertDuration,
    help: 'Duration of successful ClickHouse inserts',
    labelNames: ['table'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [deps.metrics],
  });
  const batchRows = new Histogram({
    name: METRIC_NAMES.clickhouseBatchRows,
    help: 'Rows per ClickHouse insert',
    labelNames: ['table'],
    buckets: [1, 10, 100, 500, 1_000, 5_000, 10_000, 50_000],
    registers: [deps.metrics],
  });
  // 1 for the cause of the failure the writer is retrying, 0 for the others and once an insert
  // succeeds: the alert names the cause (a ZooKeeper outage, a full disk) while it lasts.
  const failingGauge = new Gauge({
    name: METRIC_NAMES.clickhouseInsertFailing,
    help: 'Whether inserts are failing now, by the cause of the last failure (zookeeper, disk_full, unreachable, overloaded, other)',
    labelNames: ['table', 'cause'],
    registers: [deps.metrics],
  });
  const now = deps.now ?? Date.now;
  let failing: { sinceMs: number; cause: ClickHouseFailureCause; detail: string } | undefined;
  const setFailing = (cause: ClickHouseFailureCause | undefined) => {
    for (const c of CLICKHOUSE_FAILURE_CAUSES) failingGauge.set({ table, cause: c }, c === cause ? 1 : 0);
  };
  setFailing(undefined);
  // This writer's series start at zero, so rate() and the insert-failure alert work from the first scrape.
  rowsInserted.inc({ table }, 0);
  for (const retryable of ['true', 'false']) failures.inc({ table, retryable }, 0);
  duration.zero({ table });
  batchRows.zero({ table });

  return {
    failing: () => failing,
    async write(lines, ctx) {
      if (lines.length === 0) return;
      const columns = typeof deps.columns === 'function' ? deps.columns(lines) : deps.columns;
      for (let attempt = 0; ; attempt++) {
        const end = duration.startTimer({ table });
        try {
          await ch.insertTabSeparated(table, columns, lines);
          end();
          rowsInserted.inc({ table }, lines.length);
          batchRows.observe({ table }, lines.length);
          if (attempt > 0) logger.info({ table, attempt, rows: lines.length }, 'clickhouse insert succeeded after retries');
          if (failing) {
            failing = undefined;
            setFailing(undefined);
          }
          return;
        } catch (err) {
          const retryable = isRetryable(err);
          failures.inc({ table, retryable: String(retryable) });
          const cause = clickHouseFailureCause(err);
          failing = { sinceMs: failing?.sinceMs ?? now(), cause, detail: errorMessage(err).slice(0, 300) };
          setFailing(cause);
          if (!retryable) {
            await deps.onRejected?.(err);
            throw err;
          }
          if (!ctx.shouldContinue()) {
            throw new AppError('aborted', 'stopping while clickhouse is unavailable; batch left uncommitted', { retryable: true, cause: err });
          }
          const backoff = Math.min(maxBackoffMs, initialBackoffMs * 2 ** Math.min(attempt, 10));
          const jittered = backoff / 2 + Math.random() * (backoff / 2);
          logger.warn({ table, attempt, cause, backoffMs: Math.round(jittered), err: (err as Error).message }, 'clickhouse insert failed, retrying');
          await sleep(jittered);
          await ctx.heartbeat();
        }
      }
    },
  };
}

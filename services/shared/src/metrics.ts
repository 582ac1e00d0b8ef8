import { collectDefaultMetrics, Registry } from 'prom-client';

export type { Registry };

/**
 * One registry per service instance (never the global one), so tests can build several
 * services in one process and each /metrics shows only its own series.
 */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Every metric name in one place (Prometheus conventions: base units, `_total` counters). */
export const METRIC_NAMES = {
  clickhouseRowsInserted: 'ingest_clickhouse_rows_inserted_total',
  clickhouseInsertDuration: 'ingest_clickhouse_insert_duration_seconds',
  clickhouseInsertFailures: 'ingest_clickhouse_insert_failures_total',
  clickhouseBatchRows: 'ingest_clickhouse_batch_rows',
  deadLetters: 'ingest_dead_letters_total',
} as const;

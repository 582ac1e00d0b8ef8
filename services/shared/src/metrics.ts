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
  httpRequests: 'ingest_http_requests_total',
  httpRequestDuration: 'ingest_http_request_duration_seconds',
  eventsAccepted: 'ingest_events_accepted_total',
  eventsRejected: 'ingest_events_rejected_total',
  jobsCreated: 'ingest_jobs_created_total',
  allowanceRefusals: 'ingest_allowance_refusals_total',
  rateLimitRefusals: 'ingest_rate_limit_refusals_total',
  kafkaProduceDuration: 'ingest_kafka_produce_duration_seconds',
} as const;

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { BUILD_VERSION } from './build-version.js';

export type { Registry };

/**
 * One registry per service instance (never the global one), so tests can build several
 * services in one process and each /metrics shows only its own series.
 */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  // Which release runs where during a rolling upgrade (docs/releases.md).
  new Gauge({
    name: METRIC_NAMES.buildInfo,
    help: 'The release this process runs (label version); always 1',
    labelNames: ['version'],
    registers: [registry],
  }).set({ version: BUILD_VERSION }, 1);
  return registry;
}

/** Every metric name in one place (Prometheus conventions: base units, `_total` counters). */
export const METRIC_NAMES = {
  buildInfo: 'ingest_build_info',
  clickhouseRowsInserted: 'ingest_clickhouse_rows_inserted_total',
  clickhouseInsertDuration: 'ingest_clickhouse_insert_duration_seconds',
  clickhouseInsertFailures: 'ingest_clickhouse_insert_failures_total',
  clickhouseInsertFailing: 'ingest_clickhouse_insert_failing',
  clickhouseBatchRows: 'ingest_clickhouse_batch_rows',
  clickhouseReplicaUnhealthy: 'ingest_clickhouse_replica_unhealthy',
  eventStoredLatency: 'ingest_event_stored_latency_seconds',
  deadLetters: 'ingest_dead_letters_total',
  dedupeHits: 'ingest_dedupe_hits_total',
  identityLinks: 'ingest_identity_links_total',
  identityJoined: 'ingest_identity_joined_total',
  identityConflicts: 'ingest_identity_conflicts_total',
  identityWaits: 'ingest_identity_waits_total',
  dedupeUnique: 'ingest_dedupe_unique_events_total',
  dedupeMarks: 'ingest_dedupe_marks',
  dedupeMarkBytes: 'ingest_dedupe_mark_bytes',
  dedupeEvictedMarks: 'ingest_dedupe_evicted_marks_total',
  dedupeRestoredMarks: 'ingest_dedupe_restored_marks_total',
  dedupeUnwrittenMarks: 'ingest_dedupe_unwritten_marks',
  httpRequests: 'ingest_http_requests_total',
  httpRequestDuration: 'ingest_http_request_duration_seconds',
  httpTimeouts: 'ingest_http_timeouts_total',
  eventsAccepted: 'ingest_events_accepted_total',
  eventsRejected: 'ingest_events_rejected_total',
  jobsCreated: 'ingest_jobs_created_total',
  allowanceRefusals: 'ingest_allowance_refusals_total',
  rateLimitRefusals: 'ingest_rate_limit_refusals_total',
  accountRateLimitRefusals: 'ingest_account_rate_limit_refusals_total',
  uploadRefusals: 'ingest_upload_refusals_total',
  uploadsOpen: 'ingest_uploads_open',
  dashboardDeadLetterScans: 'ingest_dashboard_deadletter_scans_total',
  kafkaProduceDuration: 'ingest_kafka_produce_duration_seconds',
  redisCommandDuration: 'ingest_redis_command_duration_seconds',
  kafkaProducerRenewals: 'ingest_kafka_producer_renewals_total',
  jobsFinished: 'ingest_jobs_finished_total',
  jobDuration: 'ingest_job_duration_seconds',
  jobEventsProcessed: 'ingest_job_events_processed_total',
  jobsAbandoned: 'ingest_jobs_abandoned_total',
  jobBufferBytes: 'ingest_job_buffer_bytes',
  consumerLag: 'ingest_consumer_lag_messages',
  kafkaBrokers: 'ingest_kafka_brokers',
  consumerMessages: 'ingest_consumer_messages_total',
  consumerBatchDuration: 'ingest_consumer_batch_duration_seconds',
  consumerBatchFailures: 'ingest_consumer_batch_failures_total',
  usageReconcileRuns: 'ingest_usage_reconcile_runs_total',
  usageReconciledAccounts: 'ingest_usage_reconciled_accounts_total',
  usageReconcileLastSuccess: 'ingest_usage_reconcile_last_success_timestamp_seconds',
  controlPlaneRecords: 'ingest_control_plane_records',
  controlPlaneLastApplied: 'ingest_control_plane_last_applied_timestamp_seconds',
  crmCalls: 'ingest_crm_calls_total',
  crmCallDuration: 'ingest_crm_call_duration_seconds',
  crmRetries: 'ingest_crm_retries_total',
  crmRecordsCoalesced: 'ingest_crm_events_coalesced_total',
  crmSyncLag: 'ingest_crm_sync_lag_seconds',
  crmSyncOutcomes: 'ingest_crm_sync_outcomes_total',
  crmSyncSkipped: 'ingest_crm_sync_skipped_total',
  crmPausedAccounts: 'ingest_crm_paused_accounts',
  crmParkEvents: 'ingest_crm_park_events_total',
  crmParkedAccounts: 'ingest_crm_parked_accounts',
  crmParkedEvents: 'ingest_crm_parked_events',
  crmSuspendedAccounts: 'ingest_crm_suspended_accounts',
  crmSyncUnhealthyAccounts: 'ingest_crm_sync_unhealthy_accounts',
  crmSyncStuckAccounts: 'ingest_crm_sync_stuck_accounts',
  crmSyncUnhealthySeconds: 'ingest_crm_sync_unhealthy_seconds',
  crmOAuthRefreshes: 'ingest_crm_oauth_refreshes_total',
  crmCredentialsBroken: 'ingest_crm_credentials_broken',
  crmCredentialsAadV1: 'ingest_crm_credentials_aad_v1',
  crmOAuthRevocations: 'ingest_crm_oauth_revocations_total',
} as const;

/**
 * A counter several parts of one service share (e.g. dead letters by consumer): the first part
 * registers it, the others get the same instance instead of a duplicate-name error.
 */
export function sharedCounter<L extends string>(registry: Registry, config: { name: string; help: string; labelNames: readonly L[] }): Counter<L> {
  const existing = registry.getSingleMetric(config.name);
  if (existing) return existing as Counter<L>;
  return new Counter({ ...config, registers: [registry] });
}

/** A histogram several parts of one service share (e.g. both HTTP listeners, every Redis client): as sharedCounter. */
export function sharedHistogram<L extends string>(
  registry: Registry,
  config: { name: string; help: string; labelNames: readonly L[]; buckets: number[] },
): Histogram<L> {
  const existing = registry.getSingleMetric(config.name);
  if (existing) return existing as Histogram<L>;
  return new Histogram({ ...config, registers: [registry] });
}

import { createEventOutcomeMetrics } from '@ingest/domain';
import { METRIC_NAMES, type Registry } from '@ingest/platform';
import { Counter, Histogram } from 'prom-client';

/**
 * Counters of what the ingestion routes decide; labels are bounded sets (source, route, code).
 * The gateway decides the events of POST /v1/events (source `api`); bulk and CSV events are
 * counted under the same names by the processor's job runner.
 */
export interface IngestMetrics {
  accepted: Counter<'source'>;
  rejected: Counter<'source' | 'code'>;
  jobsCreated: Counter<'source'>;
  allowanceRefusals: Counter<'route'>;
  produceDuration: Histogram<'topic'>;
}

/** The routes that can refuse with 402; their series start at zero. */
export const ALLOWANCE_ROUTES = ['/v1/events', '/v1/events/bulk', '/v1/backfill/csv', '/dashboard/api/jobs/csv'] as const;

export function createIngestMetrics(registry: Registry): IngestMetrics {
  const metrics: IngestMetrics = {
    ...createEventOutcomeMetrics(registry, ['api']),
    jobsCreated: new Counter({ name: METRIC_NAMES.jobsCreated, help: 'Bulk and CSV jobs queued', labelNames: ['source'], registers: [registry] }),
    allowanceRefusals: new Counter({ name: METRIC_NAMES.allowanceRefusals, help: 'Requests refused with 402', labelNames: ['route'], registers: [registry] }),
    produceDuration: new Histogram({
      name: METRIC_NAMES.kafkaProduceDuration,
      help: 'Time until Kafka acknowledged (acks=all)',
      labelNames: ['topic'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
  };
  // Known label values start at zero, so rate() and the alerts see them from the first scrape.
  for (const source of ['bulk', 'csv']) metrics.jobsCreated.inc({ source }, 0);
  for (const route of ALLOWANCE_ROUTES) metrics.allowanceRefusals.inc({ route }, 0);
  metrics.produceDuration.zero({ topic: 'events.raw' });
  return metrics;
}

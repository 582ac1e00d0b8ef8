import { METRIC_NAMES, type Registry } from '@ingest/shared';
import { Counter, Histogram } from 'prom-client';

/** Counters of what the ingestion routes decide; labels are bounded sets (route, code). */
export interface IngestMetrics {
  accepted: Counter<'route'>;
  rejected: Counter<'route' | 'code'>;
  jobsCreated: Counter<'source'>;
  allowanceRefusals: Counter<'route'>;
  produceDuration: Histogram<'topic'>;
}

export function createIngestMetrics(registry: Registry): IngestMetrics {
  return {
    accepted: new Counter({ name: METRIC_NAMES.eventsAccepted, help: 'Events accepted (written to Kafka)', labelNames: ['route'], registers: [registry] }),
    rejected: new Counter({
      name: METRIC_NAMES.eventsRejected,
      help: 'Events rejected by validation or allowance',
      labelNames: ['route', 'code'],
      registers: [registry],
    }),
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
}

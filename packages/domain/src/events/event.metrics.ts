import type { EventSource } from '@ingest/schemas';
import { Counter } from 'prom-client';
import { METRIC_NAMES, type Registry } from '@ingest/platform';

/** The `source` label of the event counters: the route family an event came in by (EventRecord.source). */
export const EVENT_SOURCES = ['api', 'bulk', 'csv'] as const satisfies readonly EventSource[];

export interface EventOutcomeMetrics {
  /** labels: source */
  accepted: Counter<'source'>;
  /** labels: source, code (the stable error code of the event's first error) */
  rejected: Counter<'source' | 'code'>;
}

/**
 * ingest_events_accepted_total{source} and ingest_events_rejected_total{source, code}, the same
 * definition wherever events are decided: the gateway decides `api` events (POST /v1/events),
 * the processor's job runner decides `bulk` and `csv` events when their job finishes. So
 * `sum(rate(ingest_events_accepted_total[5m]))` over all services counts every event once.
 * Accepted series start at zero for every source; rejected ones appear with their first code
 * (the codes are the validation rules' and the CSV reader's own, not one list).
 */
export function createEventOutcomeMetrics(registry: Registry, sources: readonly (typeof EVENT_SOURCES)[number][]): EventOutcomeMetrics {
  const accepted = new Counter<'source'>({
    name: METRIC_NAMES.eventsAccepted,
    help: 'Events accepted, by source: api when Kafka acknowledged them (gateway), bulk and csv when their job finished (processor)',
    labelNames: ['source'],
    registers: [registry],
  });
  const rejected = new Counter<'source' | 'code'>({
    name: METRIC_NAMES.eventsRejected,
    help: 'Events rejected by validation or the allowance, by source and the code of their first error',
    labelNames: ['source', 'code'],
    registers: [registry],
  });
  for (const source of sources) accepted.inc({ source }, 0);
  return { accepted, rejected };
}

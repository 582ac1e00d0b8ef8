import { createEventOutcomeMetrics, type EventOutcomeMetrics } from '@ingest/domain';
import { METRIC_NAMES, type Registry } from '@ingest/platform';
import { Counter, Gauge, Histogram } from 'prom-client';

export interface JobMetrics {
  /** labels: source, status (completed | failed) */
  finished: Counter<'source' | 'status'>;
  /** Processing time of one run of a job, seal to final status; labels: source, status. */
  duration: Histogram<'source' | 'status'>;
  /** Counted once per finished job from its final counts; labels: source, outcome (accepted | rejected | duplicate). */
  events: Counter<'source' | 'outcome'>;
  /** Jobs given up before their seal; labels: source, reason (idle | buffer_full). */
  abandoned: Counter<'source' | 'reason'>;
  /**
   * ingest_events_accepted_total / ingest_events_rejected_total for source bulk and csv, the
   * gateway's counters of POST /v1/events continued: counted once per finished job.
   */
  outcomes: EventOutcomeMetrics;
}

const SOURCES = ['bulk', 'csv'] as const;

/** `bufferedBytes`: the bytes of unsealed jobs' chunks held now (exported as a gauge). */
export function createJobMetrics(registry: Registry, bufferedBytes: () => number = () => 0): JobMetrics {
  new Gauge({
    name: METRIC_NAMES.jobBufferBytes,
    help: 'Bytes of chunk messages of unsealed jobs held by the job runner (capped by PROCESSOR_JOB_BUFFER_MAX_BYTES)',
    registers: [registry],
    collect() {
      this.set(bufferedBytes());
    },
  });
  const metrics: JobMetrics = {
    finished: new Counter({
      name: METRIC_NAMES.jobsFinished,
      help: 'Bulk and CSV jobs finished, by final status',
      labelNames: ['source', 'status'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: METRIC_NAMES.jobDuration,
      help: 'Time to process one bulk or CSV job once sealed',
      labelNames: ['source', 'status'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    }),
    events: new Counter({
      name: METRIC_NAMES.jobEventsProcessed,
      help: 'Events of finished bulk and CSV jobs, by outcome',
      labelNames: ['source', 'outcome'],
      registers: [registry],
    }),
    abandoned: new Counter({
      name: METRIC_NAMES.jobsAbandoned,
      help: 'Jobs given up before their seal: idle (no chunk or seal within the seal timeout) or buffer_full (the job buffer cap was reached and the job was the idlest)',
      labelNames: ['source', 'reason'],
      registers: [registry],
    }),
    outcomes: createEventOutcomeMetrics(registry, SOURCES),
  };
  // Every known label combination starts at zero, so rate() and the alerts see it from the first scrape.
  for (const source of SOURCES) {
    for (const reason of ['idle', 'buffer_full']) metrics.abandoned.inc({ source, reason }, 0);
    for (const status of ['completed', 'failed']) {
      metrics.finished.inc({ source, status }, 0);
      metrics.duration.zero({ source, status });
    }
    for (const outcome of ['accepted', 'rejected', 'duplicate']) metrics.events.inc({ source, outcome }, 0);
  }
  return metrics;
}

/**
 * A freshly assembled processor already exports the zero series of every label combination it
 * knows, so rate() and the alerts work from the first scrape. No servers: nothing is started,
 * the clients are never called.
 */
import { type ClickHouse, createLogger, createMetricsRegistry, type KafkaClient, type Producer, type Redis } from '@ingest/platform';
import { sampleValue } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { createProcessor } from './processor.js';

const unused = <T>(): T => ({}) as T;

describe('processor metrics before the first message', () => {
  it('has the zero series of every stage, job outcome, event source and insert', async () => {
    const metrics = createMetricsRegistry('processor');
    createProcessor({
      kafka: unused<KafkaClient>(),
      producer: unused<Producer>(),
      ch: unused<ClickHouse>(),
      redis: unused<Redis>(),
      logger: createLogger({ service: 'processor', level: 'silent' }),
      metrics,
      topicPrefix: 'test',
      partitionsConsumedConcurrently: 1,
      groups: { storage: 's', dedupe: 'd', jobs: 'j' },
      dedupe: { windowMs: 1_000 },
    });
    const text = await metrics.metrics();
    const zero = (name: string, labels: Record<string, string> = {}) => expect(sampleValue(text, name, labels), `${name} ${JSON.stringify(labels)}`).toBe(0);

    for (const [consumer, outcomes] of [
      ['dedupe', ['ok', 'duplicate', 'dead_letter']],
      ['storage', ['ok', 'dead_letter']],
      ['jobs', ['ok', 'dead_letter']],
    ] as const) {
      for (const outcome of outcomes) zero('ingest_consumer_messages_total', { consumer, outcome });
      zero('ingest_consumer_batch_failures_total', { consumer });
      zero('ingest_consumer_batch_duration_seconds_count', { consumer });
    }
    for (const source of ['bulk', 'csv']) {
      zero('ingest_events_accepted_total', { source });
      zero('ingest_jobs_finished_total', { source, status: 'completed' });
      zero('ingest_jobs_finished_total', { source, status: 'failed' });
      zero('ingest_job_events_processed_total', { source, outcome: 'duplicate' });
      zero('ingest_jobs_abandoned_total', { source });
      zero('ingest_job_duration_seconds_count', { source, status: 'completed' });
    }
    // The gateway counts source api; the processor must not export an api series of its own.
    expect(sampleValue(text, 'ingest_events_accepted_total', { source: 'api' })).toBeUndefined();
    zero('ingest_clickhouse_rows_inserted_total', { table: 'events' });
    zero('ingest_clickhouse_insert_failures_total', { table: 'events', retryable: 'true' });
    zero('ingest_event_stored_latency_seconds_count');
    zero('ingest_dedupe_hits_total');
  });
});

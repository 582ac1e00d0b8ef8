import { createMetricsRegistry } from '@ingest/platform';
import { sampleValue } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { ALLOWANCE_ROUTES, createIngestMetrics } from './ingest.metrics.js';

describe('gateway ingest metrics before the first request', () => {
  it('have the zero series of source api, every 402 route, both job sources and the events.raw produce', async () => {
    const registry = createMetricsRegistry('gateway');
    createIngestMetrics(registry);
    const text = await registry.metrics();
    const zero = (name: string, labels: Record<string, string>) => expect(sampleValue(text, name, labels), `${name} ${JSON.stringify(labels)}`).toBe(0);

    zero('ingest_events_accepted_total', { source: 'api', service: 'gateway' });
    for (const route of ALLOWANCE_ROUTES) zero('ingest_allowance_refusals_total', { route });
    for (const source of ['bulk', 'csv']) zero('ingest_jobs_created_total', { source });
    zero('ingest_kafka_produce_duration_seconds_count', { topic: 'events.raw' });
    // Bulk and CSV events are the job runner's to count (processor), never the gateway's.
    expect(sampleValue(text, 'ingest_events_accepted_total', { source: 'bulk' })).toBeUndefined();
  });
});

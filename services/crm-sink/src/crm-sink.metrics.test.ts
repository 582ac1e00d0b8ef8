/**
 * A freshly assembled crm-sink already exports the zero series of every label combination it
 * knows, so rate() and the alerts work from the first scrape. No servers: nothing is started,
 * the clients are never called.
 */
import { createLogger, createMetricsRegistry, type KafkaClient, type Producer, type Redis } from '@ingest/platform';
import { type CredentialOpener, type MappingReader } from '@ingest/domain';
import { sampleValue } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import type { CreateAdapter } from './adapters/adapter.js';
import { createCrmSink } from './crm-sink.js';
import { TEST_PARK } from './crm-sink.fixture.js';

const unused = <T>(): T => ({}) as T;

describe('crm-sink metrics before the first event', () => {
  it('has the zero series of its consumer stage, sync outcomes, retries and CRM calls', async () => {
    const metrics = createMetricsRegistry('crm-sink');
    createCrmSink({
      kafka: unused<KafkaClient>(),
      producer: unused<Producer>(),
      redis: unused<Redis>(),
      mappings: unused<MappingReader>(),
      openCredential: unused<CredentialOpener>(),
      createAdapter: unused<CreateAdapter>(),
      logger: createLogger({ service: 'crm-sink', level: 'silent' }),
      metrics,
      topicPrefix: 'test',
      groupId: 'g',
      ttl: { ledgerSeconds: 60, recordStateSeconds: 60, syncStateSeconds: 60 },
      coalesce: { windowMs: 10, maxRecords: 10 },
      rate: { ratePerSecond: 1, burst: 1 },
      retry: { maxAttempts: 1, budgetMs: 1, baseDelayMs: 1, maxDelayMs: 1 },
      maxUnfinishedPerPartition: 10,
      park: TEST_PARK,
    });
    const text = await metrics.metrics();
    const zero = (name: string, labels: Record<string, string> = {}) => expect(sampleValue(text, name, labels), `${name} ${JSON.stringify(labels)}`).toBe(0);

    for (const outcome of ['ok', 'dead_letter']) zero('ingest_consumer_messages_total', { consumer: 'crm-sink', outcome });
    zero('ingest_consumer_batch_failures_total', { consumer: 'crm-sink' });
    zero('ingest_consumer_batch_duration_seconds_count', { consumer: 'crm-sink' });
    for (const state of ['synced', 'skipped', 'failed']) zero('ingest_crm_sync_outcomes_total', { state });
    for (const kind of ['rate_limited', 'transient']) zero('ingest_crm_retries_total', { kind });
    for (const adapter of ['hubspot', 'salesforce', 'webhook']) {
      for (const operation of ['read', 'upsert', 'activities']) {
        zero('ingest_crm_calls_total', { adapter, operation, status: 'ok' });
        zero('ingest_crm_call_duration_seconds_count', { adapter, operation });
      }
    }
    zero('ingest_crm_sync_lag_seconds_count');
    for (const action of ['parked', 'resumed', 'dead_lettered']) zero('ingest_crm_park_events_total', { action });
    expect(text).toMatch(/# HELP ingest_crm_sync_lag_seconds .*accept -> synced/);
  });
});

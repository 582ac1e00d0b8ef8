import { describe, expect, it } from 'vitest';
import { createMetricsRegistry } from '../metrics.js';
import { sampleValue } from '@ingest/testkit';
import type { BatchContext, ConsumedMessage } from './consumer.js';
import { createConsumerStageMetrics } from './consumer.metrics.js';

const ctx: BatchContext = { topic: 't', partition: 0, heartbeat: async () => {}, shouldContinue: () => true };
const message: ConsumedMessage = { topic: 't', partition: 0, offset: '0', key: null, value: null, headers: {}, timestamp: 0 };

describe('createConsumerStageMetrics', () => {
  it('exports the zero series of its outcomes, failures and duration before any batch', async () => {
    const registry = createMetricsRegistry('processor');
    createConsumerStageMetrics(registry, 'dedupe', ['ok', 'duplicate', 'dead_letter']);
    createConsumerStageMetrics(registry, 'storage', ['ok', 'dead_letter']);
    const text = await registry.metrics();
    expect(sampleValue(text, 'ingest_consumer_messages_total', { consumer: 'dedupe', outcome: 'duplicate' })).toBe(0);
    expect(sampleValue(text, 'ingest_consumer_messages_total', { consumer: 'storage', outcome: 'dead_letter' })).toBe(0);
    expect(sampleValue(text, 'ingest_consumer_messages_total', { consumer: 'storage', outcome: 'duplicate' })).toBeUndefined();
    expect(sampleValue(text, 'ingest_consumer_batch_failures_total', { consumer: 'storage' })).toBe(0);
    expect(sampleValue(text, 'ingest_consumer_batch_duration_seconds_count', { consumer: 'dedupe' })).toBe(0);
  });

  it('times every batch, counts the ones that throw, and counts messages by outcome', async () => {
    const registry = createMetricsRegistry('processor');
    const stage = createConsumerStageMetrics(registry, 'jobs', ['ok', 'dead_letter']);
    const ok = stage.instrument(async (messages) => {
      stage.handled('ok', messages.length);
      stage.handled('dead_letter', 0);
      return { commitOffset: '5' };
    });
    const failing = stage.instrument(async () => {
      throw new Error('ClickHouse is down');
    });

    await expect(ok([message, message], ctx)).resolves.toEqual({ commitOffset: '5' });
    await expect(failing([message], ctx)).rejects.toThrow('ClickHouse is down');

    const text = await registry.metrics();
    expect(sampleValue(text, 'ingest_consumer_messages_total', { consumer: 'jobs', outcome: 'ok' })).toBe(2);
    expect(sampleValue(text, 'ingest_consumer_messages_total', { consumer: 'jobs', outcome: 'dead_letter' })).toBe(0);
    expect(sampleValue(text, 'ingest_consumer_batch_failures_total', { consumer: 'jobs' })).toBe(1);
    expect(sampleValue(text, 'ingest_consumer_batch_duration_seconds_count', { consumer: 'jobs' })).toBe(2);
  });
});

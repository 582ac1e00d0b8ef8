import { type Component, createMetricsRegistry } from '@ingest/shared';
import { testLogger, uniqueSuffix } from '@ingest/shared/testing';
// Test-only: the processor (job runner, dedupe, storage) stores what a dashboard page reads; the
// processor's own e2e test imports the gateway the same way.
import { createProcessor } from '../../../processor/src/processor.js';
import type { GatewayFixture } from './gateway.fixture.js';

/**
 * The real processor in this process, on the gateway fixture's topics, database and Redis, with
 * consumer groups of its own. Started here; the caller stops the returned parts in order.
 */
export async function startProcessorFor(gw: GatewayFixture, name: string): Promise<Component[]> {
  const parts = createProcessor({
    kafka: gw.kafka.kafka,
    producer: gw.producer,
    ch: gw.clickhouse.ch,
    redis: gw.redis,
    logger: testLogger(),
    metrics: createMetricsRegistry(name),
    topicPrefix: gw.kafka.prefix,
    jobsGroupId: `jobs-${uniqueSuffix()}`,
    storageGroupId: `storage-${uniqueSuffix()}`,
    dedupeGroupId: `dedupe-${uniqueSuffix()}`,
    dedupeWindowMs: 7 * 24 * 3600 * 1000,
    partitionsConsumedConcurrently: 3,
  });
  for (const part of parts) await part.start();
  return parts;
}

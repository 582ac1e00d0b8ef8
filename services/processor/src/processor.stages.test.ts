import { createMetricsRegistry, type ClickHouse, type KafkaClient, type Producer, type Redis } from '@ingest/platform';
import { testLogger } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { loadProcessorConfig } from './config.js';
import { createProcessor, type ProcessorStage } from './processor.js';

// Building the parts does no I/O (consumers connect in start()), so placeholders suffice.
function partsFor(stages?: ProcessorStage[]): string[] {
  return createProcessor({
    stages,
    kafka: {} as KafkaClient,
    producer: {} as Producer,
    ch: {} as ClickHouse,
    redis: {} as Redis,
    logger: testLogger(),
    metrics: createMetricsRegistry('stages-test'),
    topicPrefix: '',
    partitionsConsumedConcurrently: 1,
    groups: { storage: 's', dedupe: 'd', jobs: 'j' },
    dedupe: { windowMs: 60_000 },
  }).map((part) => part.name);
}

describe('processor stages', () => {
  it('runs every stage by default and only the named ones when told', () => {
    expect(partsFor()).toEqual(['job-runner', 'dedupe-consumer', 'storage-consumer']);
    expect(partsFor(['storage'])).toEqual(['storage-consumer']);
    expect(partsFor(['dedupe', 'jobs', 'dedupe'])).toEqual(['dedupe-consumer', 'job-runner']);
  });

  it('reads PROCESSOR_STAGES as a comma-separated list and refuses unknown stages', () => {
    expect(loadProcessorConfig({ PROCESSOR_STAGES: 'dedupe,storage' }).PROCESSOR_STAGES).toBe('dedupe,storage');
    expect(loadProcessorConfig({}).PROCESSOR_STAGES).toBe('jobs,dedupe,storage');
    expect(() => loadProcessorConfig({ PROCESSOR_STAGES: 'dedupe,metering' })).toThrow(/PROCESSOR_STAGES/);
  });
});

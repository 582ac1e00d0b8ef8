import { type ClickHouse, type Component, createDeadLetterSink, type KafkaClient, type Logger, type Producer, type Registry, topicName } from '@ingest/shared';
import { createClickHouseWriter } from './storage/clickhouse.writer.js';
import { createStorageConsumer } from './storage/storage.consumer.js';

export interface ProcessorDeps {
  kafka: KafkaClient;
  producer: Producer;
  ch: ClickHouse;
  logger: Logger;
  metrics: Registry;
  topicPrefix: string;
  storageGroupId: string;
  partitionsConsumedConcurrently: number;
}

/** Assembles the processor's parts; main.ts and the integration tests both call this. */
export function createProcessor(deps: ProcessorDeps): Component[] {
  const writer = createClickHouseWriter({ ch: deps.ch, table: 'events', logger: deps.logger, metrics: deps.metrics });
  const deadLetters = createDeadLetterSink(deps.producer, topicName(deps.topicPrefix, 'deadLetters'), 'processor-storage');
  const storage = createStorageConsumer({
    kafka: deps.kafka,
    topic: topicName(deps.topicPrefix, 'eventsUnique'),
    groupId: deps.storageGroupId,
    writer,
    deadLetters,
    logger: deps.logger,
    metrics: deps.metrics,
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently,
  });
  return [storage];
}

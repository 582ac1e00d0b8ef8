/**
 * Real server: Kafka. The lag gauge reads the committed and end offsets the broker has: a group
 * that committed nothing lags by everything in the topic, and by nothing once it consumed and
 * committed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMetricsRegistry, METRIC_NAMES } from '../metrics.js';
import { createTestKafka, type TestKafka, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { createBatchConsumer } from './consumer.js';
import { createLagCollector } from './lag.js';
import { createProducer, type Producer } from './producer.js';

let kafka: TestKafka;
let producer: Producer;

beforeAll(async () => {
  kafka = await createTestKafka(['eventsRaw']);
  producer = createProducer(kafka.kafka);
  await producer.connect();
});

afterAll(async () => {
  await producer?.disconnect();
  await kafka?.cleanup();
});

describe('consumer lag collector against real Kafka', () => {
  it('shows N for a group that committed nothing and 0 once it consumed and committed', async () => {
    const topic = kafka.topic('eventsRaw');
    const groupId = `lag-${uniqueSuffix()}`;
    const n = 25;
    await producer.send(
      topic,
      Array.from({ length: n }, (_, i) => ({ key: `acc:evt-${i}`, value: JSON.stringify({ i }) })),
    );
    const registry = createMetricsRegistry('lag-test');
    const collector = createLagCollector({ kafka: kafka.kafka, groupId, topics: [topic], registry, logger: testLogger() });
    const gaugeTotal = async () => {
      const metric = await registry.getSingleMetric(METRIC_NAMES.consumerLag)?.get();
      return (metric?.values ?? []).filter((v) => v.labels.group === groupId && v.labels.topic === topic).reduce((sum, v) => sum + v.value, 0);
    };

    try {
      const before = await collector.collect();
      expect(before).toHaveLength(3);
      expect(before?.every((p) => p.committed === null)).toBe(true);
      expect(await gaugeTotal()).toBe(n);

      let consumed = 0;
      const consumer = createBatchConsumer(kafka.kafka, {
        name: 'lag-test-consumer',
        groupId,
        topics: [topic],
        logger: testLogger(),
        handleBatch: async (messages) => {
          consumed += messages.length;
        },
      });
      await consumer.start();
      try {
        await waitFor(async () => consumed >= n && (await collector.collect())?.every((p) => p.lag === 0n), {
          description: 'lag 0 after consuming and committing',
        });
      } finally {
        await consumer.stop();
      }
      expect(await gaugeTotal()).toBe(0);
    } finally {
      await collector.stop();
    }
  });
});

/**
 * Real server: the stack's Kafka (one broker in `npm test`; the test reads how many the cluster
 * has). `ingest setup` with a replication factor one above the brokers refuses with exit code 2
 * and the reason, before it creates any topic or touches ClickHouse.
 */
import { describe, expect, it } from 'vitest';
import { createKafkaClient, withAdmin } from '@ingest/platform';
import { integrationEnv, testLogger, uniqueSuffix } from '@ingest/testkit';
import { runIngest } from './ingest.js';

const env = integrationEnv();

describe('ingest setup on a cluster smaller than the replication factor', () => {
  it('exits 2 with the reason and creates no topic', async () => {
    const kafka = createKafkaClient({ brokers: env.kafkaBrokers, clientId: 'test-setup-replication', driver: env.kafkaDriver, logger: testLogger() });
    const brokers = (await withAdmin(kafka, (admin) => admin.brokerIds())).length;
    expect(brokers).toBeGreaterThan(0);
    const prefix = `test-rf-${uniqueSuffix()}.`;
    let stderr = '';
    const code = await runIngest(['setup'], {
      env: {
        KAFKA_BROKERS: env.kafkaBrokers,
        KAFKA_DRIVER: env.kafkaDriver,
        KAFKA_TOPIC_PREFIX: prefix,
        KAFKA_REPLICATION_FACTOR: String(brokers + 1),
        KAFKA_MIN_INSYNC_REPLICAS: '1',
        // Unreachable on purpose: the refusal must come before ClickHouse.
        CLICKHOUSE_URL: 'http://127.0.0.1:1',
        LOG_LEVEL: 'silent',
      },
      stdout: () => {},
      stderr: (t) => void (stderr += t),
    });
    expect({ code, stderr }).toEqual({
      code: 2,
      stderr: `error: KAFKA_REPLICATION_FACTOR=${brokers + 1} needs at least ${brokers + 1} brokers, but the cluster has ${brokers}: lower it (1 for the single local broker) or add brokers\n`,
    });
    const topics = await withAdmin(kafka, (admin) => admin.listTopics());
    expect(topics.filter((t) => t.startsWith(prefix))).toEqual([]);
  });
});

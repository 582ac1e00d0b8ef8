/**
 * Real server: Kafka (the stack's single broker, or whichever KAFKA_BROKERS names). The watch
 * reads the live brokers with the admin API; the replication settings decide the verdict. On
 * the single broker: replication 1 is ok, replication 2 (min.insync 1) is degraded with the
 * missing broker unknown, replication 3 (min.insync 2) leaves too few for acks=all. The real
 * loss of a broker of three is the broker-kill scale smoke.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestKafka, type TestKafka, testLogger } from '@ingest/testkit';
import { createMetricsRegistry } from '../metrics.js';
import { type BrokerSettings, createBrokerWatch } from './broker-watch.js';

let kafka: TestKafka;
beforeAll(async () => {
  kafka = await createTestKafka([]);
});
afterAll(async () => {
  await kafka?.cleanup();
});

async function verdictWith(settings: BrokerSettings) {
  const watch = createBrokerWatch({ kafka: kafka.kafka, registry: createMetricsRegistry('broker-watch-test'), logger: testLogger(), ...settings });
  try {
    const verdict = await watch.check();
    return { verdict, degraded: watch.degraded(), waitingFor: watch.waitingFor(), healthy: watch.healthy() };
  } finally {
    await watch.stop();
  }
}

describe('broker watch against real Kafka', () => {
  it('judges the brokers the cluster reports against the replication settings', async () => {
    const whole = await verdictWith({ replicationFactor: 1, minInsyncReplicas: 1 });
    expect(whole.verdict?.status).toBe('ok');
    const live = whole.verdict?.live ?? 0;
    expect(live).toBeGreaterThanOrEqual(1);
    expect(whole).toMatchObject({ degraded: [], waitingFor: [], healthy: true });

    const more = await verdictWith({ replicationFactor: live + 1, minInsyncReplicas: live });
    expect(more.verdict).toEqual({ status: 'degraded', live, expected: live + 1, missing: [] });
    expect(more.healthy).toBe(true);
    expect(more.degraded).toEqual([
      `kafka-brokers: ${live} of ${live + 1} live (missing brokers not seen since this service started; at least KAFKA_MIN_INSYNC_REPLICAS=${live}: writes go on)`,
    ]);

    const tooFew = await verdictWith({ replicationFactor: live + 2, minInsyncReplicas: live + 1 });
    expect(tooFew.verdict?.status).toBe('unavailable');
    expect(tooFew.healthy).toBe(false);
    expect(tooFew.waitingFor).toEqual([
      `kafka-brokers: ${live} of ${live + 2} live (missing brokers not seen since this service started; fewer than KAFKA_MIN_INSYNC_REPLICAS=${live + 1}: writes fail)`,
    ]);
  });
});

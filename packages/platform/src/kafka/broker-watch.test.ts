/**
 * The rule of /readyz's `kafka-brokers` (docs/scale.md, "A broker that never comes back"):
 * degraded but ready while live brokers are fewer than expected and at least min.insync, not
 * ready below min.insync; and the watch that reads the live brokers with the admin API.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../logger.js';
import { createMetricsRegistry, METRIC_NAMES } from '../metrics.js';
import { type BrokerMemory, type BrokerVerdict, createBrokerWatch, describeBrokers, judgeBrokers, NO_BROKERS_SEEN } from './broker-watch.js';
import type { KafkaClient } from './driver.js';

const CLUSTER = { replicationFactor: 3, minInsyncReplicas: 2 };

/** Judges readings in turn, from a service that has just started. */
function judgeAll(readings: number[][], settings = CLUSTER) {
  let memory: BrokerMemory = NO_BROKERS_SEEN;
  return readings.map((ids) => {
    const judged = judgeBrokers(ids, memory, settings);
    memory = judged.memory;
    return judged.verdict;
  });
}

describe('judgeBrokers', () => {
  it('three of three is ok; one lost is degraded, naming it; two lost is unavailable; back is ok', () => {
    expect(judgeAll([[1, 2, 3], [1, 3], [3], [1, 2, 3]])).toEqual([
      { status: 'ok', live: 3, expected: 3, missing: [] },
      { status: 'degraded', live: 2, expected: 3, missing: [2] },
      { status: 'unavailable', live: 1, expected: 3, missing: [1, 2] },
      { status: 'ok', live: 3, expected: 3, missing: [] },
    ]);
  });

  it('expects the replication factor even when the broker was lost before the service started (its id unknown)', () => {
    expect(judgeAll([[1, 3]])).toEqual([{ status: 'degraded', live: 2, expected: 3, missing: [] }]);
  });

  it('expects the most brokers seen at once, in a cluster larger than the replication factor', () => {
    expect(
      judgeAll([
        [1, 2, 3, 4, 5],
        [1, 2, 4, 5],
      ]),
    ).toEqual([
      { status: 'ok', live: 5, expected: 5, missing: [] },
      { status: 'degraded', live: 4, expected: 5, missing: [3] },
    ]);
  });

  it('forgets a broker replaced by one with a new id once the cluster is whole again', () => {
    expect(
      judgeAll([
        [1, 2, 3],
        [1, 3],
        [1, 3, 4],
        [1, 2, 3],
      ]).map((v) => [v.status, v.missing]),
    ).toEqual([
      ['ok', []],
      ['degraded', [2]],
      ['ok', []],
      ['ok', []],
    ]);
  });

  it('a single broker with replication 1 is ok, and unavailable when Kafka reports none', () => {
    expect(judgeAll([[1], []], { replicationFactor: 1, minInsyncReplicas: 1 })).toEqual([
      { status: 'ok', live: 1, expected: 1, missing: [] },
      { status: 'unavailable', live: 0, expected: 1, missing: [1] },
    ]);
  });
});

describe('describeBrokers', () => {
  it('says the count, the missing ids and the effect on writes, in a bounded line', () => {
    const [, degraded, unavailable] = judgeAll([[1, 2, 3], [1, 3], [3]]) as BrokerVerdict[];
    expect(describeBrokers(degraded as BrokerVerdict, CLUSTER)).toBe(
      'kafka-brokers: 2 of 3 live (missing broker 2; at least KAFKA_MIN_INSYNC_REPLICAS=2: writes go on)',
    );
    expect(describeBrokers(unavailable as BrokerVerdict, CLUSTER)).toBe(
      'kafka-brokers: 1 of 3 live (missing broker 1, 2; fewer than KAFKA_MIN_INSYNC_REPLICAS=2: writes fail)',
    );
    expect(describeBrokers({ status: 'degraded', live: 2, expected: 3, missing: [] }, CLUSTER)).toBe(
      'kafka-brokers: 2 of 3 live (missing brokers not seen since this service started; at least KAFKA_MIN_INSYNC_REPLICAS=2: writes go on)',
    );
    const many = describeBrokers({ status: 'degraded', live: 20, expected: 40, missing: Array.from({ length: 20 }, (_, i) => i + 21) }, CLUSTER);
    expect(many).toBe('kafka-brokers: 20 of 40 live (missing broker 21, 22, 23, 24, 25 and 15 more; at least KAFKA_MIN_INSYNC_REPLICAS=2: writes go on)');
  });
});

describe('broker watch', () => {
  function fakeKafka(readings: (number[] | Error)[]): KafkaClient {
    return {
      admin: () => ({
        connect: async () => {},
        disconnect: async () => {},
        brokerIds: async () => {
          const next = readings.length > 1 ? readings.shift() : readings[0];
          if (next instanceof Error) throw next;
          return next ?? [];
        },
      }),
    } as unknown as KafkaClient;
  }

  it('is ready but degraded with one broker lost, not ready below min.insync, keeps its verdict when Kafka does not answer, and sets ingest_kafka_brokers', async () => {
    const registry = createMetricsRegistry('test');
    const watch = createBrokerWatch({
      kafka: fakeKafka([[1, 2, 3], [1, 3], new Error('connect ECONNREFUSED'), [1], [1, 2, 3]]),
      registry,
      logger: createLogger({ service: 'test', level: 'silent' }),
      ...CLUSTER,
    });
    const brokersGauge = async () => (await registry.getSingleMetric(METRIC_NAMES.kafkaBrokers)?.get())?.values.map((v) => v.value);
    // Before the first answer: nothing to say, and nothing held back.
    expect([watch.healthy(), watch.degraded(), watch.waitingFor()]).toEqual([true, [], []]);

    await watch.check();
    expect([watch.healthy(), watch.degraded(), watch.waitingFor()]).toEqual([true, [], []]);
    expect(await brokersGauge()).toEqual([3]);

    await watch.check();
    expect(watch.healthy()).toBe(true);
    expect(watch.degraded()).toEqual(['kafka-brokers: 2 of 3 live (missing broker 2; at least KAFKA_MIN_INSYNC_REPLICAS=2: writes go on)']);
    expect(await brokersGauge()).toEqual([2]);

    expect(await watch.check()).toBeUndefined();
    expect(watch.verdict()?.status).toBe('degraded');

    await watch.check();
    expect(watch.healthy()).toBe(false);
    expect(watch.degraded()).toEqual([]);
    expect(watch.waitingFor()).toEqual(['kafka-brokers: 1 of 3 live (missing broker 2, 3; fewer than KAFKA_MIN_INSYNC_REPLICAS=2: writes fail)']);

    await watch.check();
    expect([watch.healthy(), watch.degraded(), watch.waitingFor()]).toEqual([true, [], []]);
    expect(await brokersGauge()).toEqual([3]);
    await watch.stop();
  });
});

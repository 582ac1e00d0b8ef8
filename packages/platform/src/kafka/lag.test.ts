import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../logger.js';
import { createMetricsRegistry, METRIC_NAMES } from '../metrics.js';
import { waitFor } from '@ingest/testkit';
import type { KafkaAdmin, KafkaClient } from './driver.js';
import { createLagCollector, partitionLag } from './lag.js';

describe('partitionLag', () => {
  it.each([
    ['nothing committed: everything still in the log', '-1', 0n, 10n, 10n],
    ['nothing committed, log truncated by retention', '-1', 4n, 10n, 6n],
    ['committed part of the way', '7', 0n, 10n, 3n],
    ['caught up', '10', 0n, 10n, 0n],
    ['committed offset fell out of retention', '2', 5n, 10n, 5n],
    ['empty partition', '-1', 0n, 0n, 0n],
    ['64-bit offsets', '9007199254740993', 0n, 9007199254740995n, 2n],
  ])('%s', (_name, committed, low, high, lag) => {
    expect(partitionLag(committed, low, high)).toBe(lag);
  });
});

function captureLogs(): { logger: ReturnType<typeof createLogger>; lines: () => Record<string, unknown>[] } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  const logger = createLogger({ service: 'test', level: 'warn', destination: stream });
  return { logger, lines: () => chunks.map((c) => JSON.parse(c) as Record<string, unknown>) };
}

interface FakeAdmin {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  committedOffsets: KafkaAdmin['committedOffsets'];
  topicOffsets: KafkaAdmin['topicOffsets'];
}

function fakeKafka(admin: () => FakeAdmin): { kafka: KafkaClient; admins: () => number } {
  let count = 0;
  const kafka = {
    admin: () => {
      count++;
      return admin();
    },
  } as unknown as KafkaClient;
  return { kafka, admins: () => count };
}

describe('lag collector', () => {
  it('sets the gauge per partition, with group, topic and partition labels', async () => {
    const registry = createMetricsRegistry('test');
    const { kafka } = fakeKafka(() => ({
      connect: async () => {},
      disconnect: async () => {},
      committedOffsets: async () => [{ topic: 't', partition: 0, offset: '3' }],
      topicOffsets: async () => [
        { topic: 't', partition: 0, low: 0n, high: 10n },
        { topic: 't', partition: 1, low: 0n, high: 5n },
      ],
    }));
    const collector = createLagCollector({ kafka, groupId: 'g', topics: ['t'], registry, logger: captureLogs().logger });
    const lags = await collector.collect();
    expect(lags?.map((l) => [l.partition, l.committed, l.lag])).toEqual([
      [0, 3n, 7n],
      [1, null, 5n],
    ]);
    const metric = await registry.getSingleMetric(METRIC_NAMES.consumerLag)?.get();
    expect(metric?.values.map((v) => [v.labels, v.value])).toEqual([
      [{ group: 'g', topic: 't', partition: '0' }, 7],
      [{ group: 'g', topic: 't', partition: '1' }, 5],
    ]);

    // A second group on the same registry shares the gauge instead of failing to register.
    const other = createLagCollector({ kafka, groupId: 'g2', topics: ['t'], registry, logger: captureLogs().logger });
    await other.collect();
    expect((await registry.getSingleMetric(METRIC_NAMES.consumerLag)?.get())?.values).toHaveLength(4);
    await other.stop();
    expect((await registry.getSingleMetric(METRIC_NAMES.consumerLag)?.get())?.values).toHaveLength(2);
  });

  it('logs a failed read at warn, keeps running and reconnects on the next round', async () => {
    const { logger, lines } = captureLogs();
    let fail = true;
    const { kafka, admins } = fakeKafka(() => ({
      connect: async () => {
        if (fail) throw new Error('connect ECONNREFUSED 127.0.0.1:9092');
      },
      disconnect: async () => {},
      committedOffsets: async () => [],
      topicOffsets: async () => [{ topic: 't', partition: 0, low: 0n, high: 2n }],
    }));
    const collector = createLagCollector({ kafka, groupId: 'g', topics: ['t'], registry: createMetricsRegistry('test'), logger });
    await expect(collector.collect()).resolves.toBeUndefined();
    expect(lines()).toEqual([expect.objectContaining({ level: 'warn', msg: 'could not read consumer lag', groupId: 'g' })]);
    expect(collector.healthy()).toBe(true);

    fail = false;
    await expect(collector.collect()).resolves.toEqual([expect.objectContaining({ lag: 2n })]);
    expect(admins()).toBe(2);
  });

  it('collects on start and on its interval until stopped', async () => {
    let reads = 0;
    const { kafka } = fakeKafka(() => ({
      connect: async () => {},
      disconnect: async () => {},
      committedOffsets: async () => [],
      topicOffsets: async () => {
        reads++;
        return [];
      },
    }));
    const collector = createLagCollector({
      kafka,
      groupId: 'g',
      topics: ['t'],
      registry: createMetricsRegistry('test'),
      logger: captureLogs().logger,
      intervalMs: 20,
    });
    await collector.start();
    await waitFor(() => reads >= 3, { description: 'three collections', timeoutMs: 5_000, intervalMs: 5 });
    await collector.stop();
    const afterStop = reads;
    // Several intervals later, nothing more was read.
    await new Promise((r) => setTimeout(r, 100));
    expect(reads).toBe(afterStop);
  });
});

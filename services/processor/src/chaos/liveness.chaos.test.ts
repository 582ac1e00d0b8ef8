/**
 * Real servers: Kafka (stopped and started by this test), ClickHouse, Redis; the processor and the
 * crm-sink as real OS processes. Whatever the Kafka driver, a service whose consumer cannot run
 * for good says so on /healthz (503), so an orchestrator restarts it; the crm-sink also goes not
 * ready, then dead, when its control plane can no longer confirm it is caught up. Once Kafka is
 * back (and no one restarted them) both are alive and ready again.
 */
import { TOPICS } from '@ingest/platform';
import {
  chaosKafkaDrivers,
  createTestClickHouse,
  createTestKafka,
  ensureKafkaUp,
  integrationEnv,
  startKafka,
  stopKafka,
  type TestClickHouse,
  type TestKafka,
  uniqueSuffix,
  waitFor,
} from '@ingest/testkit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SinkFleet } from '@ingest/testkit';
import { ProcessorFleet, processorSetup } from '@ingest/testkit';

/** Small bounds, so the test sees them pass: dead after 4 s without a consumer, 3 s / 6 s without a confirmed control plane. */
const LIVENESS_ENV = {
  KAFKA_SESSION_TIMEOUT_MS: '6000',
  KAFKA_CONSUMER_DEAD_AFTER_MS: '4000',
  CONTROL_PLANE_STALE_AFTER_MS: '3000',
  CONTROL_PLANE_DEAD_AFTER_MS: '6000',
};

afterAll(async () => {
  await ensureKafkaUp(); // whatever happened, leave the broker running
});

describe.each(chaosKafkaDrivers())('liveness of services whose Kafka is gone (%s)', (driver) => {
  let kafka: TestKafka | undefined;
  let clickhouse: TestClickHouse | undefined;
  let processors: ProcessorFleet | undefined;
  let sinks: SinkFleet | undefined;

  afterEach(async () => {
    await ensureKafkaUp();
    await processors?.killAll();
    await sinks?.killAll();
    await clickhouse?.cleanup();
    await kafka?.cleanup();
  });

  it('fails /healthz while no consumer can run and passes it again once Kafka is back, with no restart', async () => {
    kafka = await createTestKafka(Object.keys(TOPICS) as (keyof typeof TOPICS)[], integrationEnv(), driver);
    clickhouse = await createTestClickHouse();
    const env = { ...LIVENESS_ENV, KAFKA_DRIVER: driver };
    processors = new ProcessorFleet({ ...processorSetup(kafka.prefix, clickhouse.database, `liveness-${driver}`), env });
    sinks = new SinkFleet({
      topicPrefix: kafka.prefix,
      redisKeyPrefix: `t${uniqueSuffix()}:`,
      groupId: `crm-sink-liveness-${uniqueSuffix()}`,
      label: `liveness-sink-${driver}`,
      env,
    });
    const [processor, sink] = await Promise.all([processors.start(), sinks.start()]);
    expect([await processor.health(), await sink.health()]).toEqual([
      { live: 200, ready: 200 },
      { live: 200, ready: 200 },
    ]);

    const stoppingAt = Date.now();
    await stopKafka();
    await waitFor(
      async () => {
        const seen = { processor: await processor.health(), sink: await sink.health() };
        if (seen.processor.live !== 503 || seen.sink.live !== 503 || seen.processor.ready !== 503 || seen.sink.ready !== 503)
          throw new Error(JSON.stringify(seen));
        return true;
      },
      { description: 'both services not ready and not alive', timeoutMs: 60_000, intervalMs: 250 },
    );
    // Dead only after the bound, not at the first failed fetch.
    expect(Date.now() - stoppingAt).toBeGreaterThanOrEqual(4_000);
    // Saying so is the service's job; restarting it is the orchestrator's: both still run.
    expect([processor.exitStatus(), sink.exitStatus()]).toEqual([undefined, undefined]);

    await startKafka();
    await waitFor(
      async () => {
        const seen = { processor: await processor.health(), sink: await sink.health() };
        if ([seen.processor.live, seen.processor.ready, seen.sink.live, seen.sink.ready].some((s) => s !== 200)) throw new Error(JSON.stringify(seen));
        return true;
      },
      { description: 'both services alive and ready again by themselves', timeoutMs: 120_000, intervalMs: 500 },
    );
    expect([processor.exitStatus(), sink.exitStatus()]).toEqual([undefined, undefined]);
  });
});

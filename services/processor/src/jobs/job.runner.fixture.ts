/**
 * The job runner on the test kit's jobs fixture (real Kafka and Redis, fresh topics, the job
 * writer that queues realistic jobs): `startRunner(overrides)` starts a runner as the
 * processor builds it, with any of its dependencies replaced (a slow status store, a hanging
 * producer, a clock), and `close()` stops every runner before the fixture's clients.
 */
import { createEventValidator } from '@ingest/domain';
import { type BatchConsumer, createDeadLetterSink, createMetricsRegistry, type Registry } from '@ingest/platform';
import { testLogger, uniqueSuffix } from '@ingest/testkit';
import { createJobsFixture, type JobsFixture } from '@ingest/testkit/processor';
import { createJobRunner, type JobRunnerDeps } from './job.runner.js';

export { RECEIVED_AT_MS } from '@ingest/testkit/processor';

export interface RunnerHandle {
  runner: BatchConsumer;
  groupId: string;
  metrics: Registry;
  /** Sum of a counter's values whose labels include `labels`. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
}

export interface JobRunnerFixture extends JobsFixture {
  startRunner(overrides?: Partial<JobRunnerDeps>): Promise<RunnerHandle>;
}

export async function createJobRunnerFixture(): Promise<JobRunnerFixture> {
  const fx = await createJobsFixture();
  const runners: BatchConsumer[] = [];
  const logger = testLogger();
  const validate = createEventValidator();
  return {
    ...fx,
    async startRunner(overrides = {}) {
      const metrics = createMetricsRegistry('processor-test');
      const groupId = overrides.groupId ?? `jobs-${uniqueSuffix()}`;
      const runner = createJobRunner({
        kafka: fx.kafka.kafka,
        producer: fx.producer,
        chunksTopic: fx.kafka.topic('jobChunks'),
        rawTopic: fx.kafka.topic('eventsRaw'),
        deadLetters: createDeadLetterSink(fx.producer, fx.kafka.topic('deadLetters'), 'processor-jobs', { metrics, label: 'jobs' }),
        statusStore: fx.statusStore,
        logger,
        metrics,
        validate,
        now: Date.now,
        partitionsConsumedConcurrently: 3,
        ...overrides,
        groupId,
      });
      runners.push(runner);
      await runner.start();
      return {
        runner,
        groupId,
        metrics,
        async metric(name, labels = {}) {
          const values = (await metrics.getSingleMetric(name)?.get())?.values ?? [];
          return values
            .filter((v) => Object.entries(labels).every(([k, want]) => String((v.labels as Record<string, unknown>)[k]) === want))
            .reduce((sum, v) => sum + v.value, 0);
        },
      };
    },
    async close() {
      await Promise.allSettled(runners.map((r) => r.stop()));
      await fx.close();
    },
  };
}

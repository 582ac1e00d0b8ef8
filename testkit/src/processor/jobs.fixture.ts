/**
 * Real Kafka and Redis for the job runner's integration tests: fresh topics under a unique
 * prefix, the real job status store, the job writer of the gateway and the console to queue realistic jobs, and
 * readers for what the runner wrote.
 */
import type { EventRecord, JobMessage, JobStatus } from '@ingest/schemas';
import { type Account, createEventValidator, createJobStatusStore, type JobStatusStore } from '@ingest/domain';
import {
  type BatchConsumer,
  type ConsumedMessage,
  createBatchConsumer,
  createDeadLetterSink,
  createMetricsRegistry,
  createProducer,
  createRedis,
  type Producer,
  type Redis,
  type Registry,
  topicOffsets,
} from '@ingest/platform';
import { createTestKafka, integrationEnv, type TestKafka, testLogger, uniqueSuffix, waitFor } from '../index.js';
import { createJobWriter, type JobWriter } from '@ingest/http';
import { createJobRunner, type JobRunnerDeps } from '@ingest/processor/job-runner';

export interface RunnerHandle {
  runner: BatchConsumer;
  groupId: string;
  metrics: Registry;
  /** Sum of a counter's values whose labels include `labels`. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
}

export interface JobsFixture {
  kafka: TestKafka;
  producer: Producer;
  redis: Redis;
  statusStore: JobStatusStore;
  /** The gateway's writer: chunks of 500, then the seal and the queued status. */
  writer: JobWriter;
  account(): Account;
  startRunner(overrides?: Partial<JobRunnerDeps>): Promise<RunnerHandle>;
  /** Writes raw job messages (all under `key`, so on one partition, in this order). */
  produceJobMessages(key: string, messages: (JobMessage | string)[]): Promise<void>;
  waitForStatus(jobId: string, check: (s: JobStatus) => boolean, description: string): Promise<JobStatus>;
  /** Every message of a topic from its beginning to its current end. */
  readToEnd(topic: string): Promise<ConsumedMessage[]>;
  rawRecords(jobId: string): Promise<EventRecord[]>;
  close(): Promise<void>;
}

export const RECEIVED_AT_MS = Date.UTC(2026, 0, 15, 12, 0, 0);

export async function createJobsFixture(): Promise<JobsFixture> {
  const env = integrationEnv();
  const kafka = await createTestKafka(['jobChunks', 'eventsRaw', 'jobProgress', 'deadLetters']);
  const producer = createProducer(kafka.kafka);
  const redis = createRedis({ url: env.redisUrl });
  await Promise.all([producer.connect(), redis.connect()]);
  const statusStore = createJobStatusStore({ redis, producer, progressTopic: kafka.topic('jobProgress'), ttlSeconds: 3600 });
  const writer = createJobWriter({ producer, chunksTopic: kafka.topic('jobChunks'), statusStore, now: () => RECEIVED_AT_MS });
  const runners: BatchConsumer[] = [];
  const logger = testLogger();
  const validate = createEventValidator();

  async function readToEnd(topic: string): Promise<ConsumedMessage[]> {
    const ends = await topicOffsets(kafka.kafka, topic);
    const pending = new Map(ends.filter((p) => p.high > p.low).map((p) => [p.partition, p.high]));
    const messages: ConsumedMessage[] = [];
    if (pending.size === 0) return messages;
    const reader = createBatchConsumer(kafka.kafka, {
      name: 'test-reader',
      groupId: `reader-${uniqueSuffix()}`,
      topics: [topic],
      logger,
      commitOffsets: false,
      partitionsConsumedConcurrently: 3,
      handleBatch: async (batch) => {
        messages.push(...batch);
        const last = batch.at(-1);
        if (last && BigInt(last.offset) + 1n >= (pending.get(last.partition) ?? 0n)) pending.delete(last.partition);
      },
    });
    await reader.start();
    try {
      await waitFor(() => pending.size === 0, { description: `${topic} read to its end`, timeoutMs: 30_000 });
    } finally {
      await reader.stop();
    }
    return messages;
  }

  return {
    kafka,
    producer,
    redis,
    statusStore,
    writer,
    account: () => ({ id: `acc_${uniqueSuffix()}`, name: 'Test', plan: 'pro', createdAt: new Date(0).toISOString(), updatedAt: new Date(0).toISOString() }),
    async startRunner(overrides = {}) {
      const metrics = createMetricsRegistry('processor-test');
      const groupId = overrides.groupId ?? `jobs-${uniqueSuffix()}`;
      const runner = createJobRunner({
        kafka: kafka.kafka,
        producer,
        chunksTopic: kafka.topic('jobChunks'),
        rawTopic: kafka.topic('eventsRaw'),
        deadLetters: createDeadLetterSink(producer, kafka.topic('deadLetters'), 'processor-jobs', { metrics, label: 'jobs' }),
        statusStore,
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
    async produceJobMessages(key, messages) {
      await producer.send(
        kafka.topic('jobChunks'),
        messages.map((m) => ({ key, value: typeof m === 'string' ? m : JSON.stringify(m) })),
      );
    },
    waitForStatus: (jobId, check, description) =>
      waitFor(
        async () => {
          const status = await statusStore.get(jobId);
          return status && check(status) ? status : undefined;
        },
        { description, timeoutMs: 60_000 },
      ),
    readToEnd,
    async rawRecords(jobId) {
      const messages = await readToEnd(kafka.topic('eventsRaw'));
      return messages.map((m) => JSON.parse(m.value?.toString() ?? 'null') as EventRecord).filter((r) => r.jobId === jobId);
    },
    async close() {
      await Promise.allSettled(runners.map((r) => r.stop()));
      await Promise.allSettled([producer.disconnect(), redis.close()]);
      await kafka.cleanup();
    },
  };
}

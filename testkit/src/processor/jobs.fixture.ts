/**
 * Real Kafka and Redis for the job runner's integration tests: fresh topics under a unique
 * prefix, the real job status store, the job writer of the gateway and the console to queue
 * realistic jobs, and readers for what the runner wrote. The runner itself is the processor's:
 * its own fixture (services/processor/src/jobs/job.runner.fixture.ts) starts it on these.
 */
import type { EventRecord, JobMessage, JobStatus } from '@ingest/schemas';
import { type Account, createJobStatusStore, type JobStatusStore } from '@ingest/domain';
import { type ConsumedMessage, createBatchConsumer, createProducer, createRedis, type Producer, type Redis, topicOffsets } from '@ingest/platform';
import { createTestKafka, integrationEnv, type TestKafka, testLogger, uniqueSuffix, waitFor } from '../index.js';
import { createJobWriter, type JobWriter } from '@ingest/http';

export interface JobsFixture {
  kafka: TestKafka;
  producer: Producer;
  redis: Redis;
  statusStore: JobStatusStore;
  /** The gateway's writer: chunks of 500, then the seal and the queued status. */
  writer: JobWriter;
  account(): Account;
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
  const logger = testLogger();

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
      await Promise.allSettled([producer.disconnect(), redis.close()]);
      await kafka.cleanup();
    },
  };
}

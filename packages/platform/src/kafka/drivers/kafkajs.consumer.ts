import type { Kafka, KafkaMessage } from 'kafkajs';
import type { ConsumedMessage, DriverConsumer, DriverConsumerOptions } from '../driver.js';
import { wrapErrors } from '../errors.js';
import { kafkajsTraits } from './kafkajs.client.js';

/**
 * One membership through kafkajs's `eachBatch` runner: it hands over one partition's batch at a
 * time (up to `partitionsConsumedConcurrently` at once) and fetches again once every batch of a
 * fetch was handled. Offsets are committed only by the wrapper (`commit`).
 *
 * kafkajs restarts a crashed member by itself only for errors it marks retriable; after a
 * broker stall longer than the session timeout it crashes with "The coordinator is not aware of
 * this member" (non-retriable) and stays down for good. So its own restart is switched off and
 * every crash goes to the wrapper, which starts a fresh membership whatever the cause.
 */
export function createKafkajsConsumer(kafka: Kafka, options: DriverConsumerOptions): DriverConsumer {
  const consumer = kafka.consumer({
    groupId: options.groupId,
    sessionTimeout: options.sessionTimeoutMs,
    heartbeatInterval: options.heartbeatIntervalMs,
    maxBytesPerPartition: options.maxBytesPerPartition,
    maxWaitTimeInMs: options.maxWaitTimeMs,
    allowAutoTopicCreation: false,
    retry: { retries: 5, initialRetryTime: 300, maxRetryTime: 5_000, restartOnFailure: async () => false },
  });
  let stopped = false;
  consumer.on(consumer.events.GROUP_JOIN, (e) => options.onJoin(e.payload.memberAssignment));
  for (const event of [consumer.events.FETCH_START, consumer.events.HEARTBEAT, consumer.events.REBALANCING]) consumer.on(event, () => options.onActivity());
  consumer.on(consumer.events.CRASH, (e) => {
    if (!stopped) options.onCrash(e.payload.error);
  });

  return {
    start: () =>
      wrapErrors('kafka consumer start', kafkajsTraits, async () => {
        await consumer.connect();
        for (const topic of options.topics) await consumer.subscribe({ topic, fromBeginning: options.fromBeginning });
        await consumer.run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: options.partitionsConsumedConcurrently,
          eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
            if (batch.messages.length === 0) return;
            await options.handleBatch({
              topic: batch.topic,
              partition: batch.partition,
              messages: batch.messages.map((m) => toConsumed(batch.topic, batch.partition, m)),
              heartbeat,
              isCurrent: () => isRunning() && !isStale(),
            });
            // Resolved even when the wrapper held the commit back: this session has seen the
            // messages and must not fetch them again; only a new session re-reads from the commit.
            if (!isStale()) resolveOffset(batch.lastOffset());
          },
        });
      }),
    commit: (offsets) =>
      wrapErrors('kafka offset commit', kafkajsTraits, () =>
        consumer.commitOffsets(offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset }))),
      ),
    async stop() {
      stopped = true;
      await wrapErrors('kafka consumer stop', kafkajsTraits, () => consumer.disconnect());
    },
  };
}

function toConsumed(topic: string, partition: number, m: KafkaMessage): ConsumedMessage {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.headers ?? {})) {
    if (v !== undefined) headers[k] = Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
  }
  return { topic, partition, offset: m.offset, key: m.key, value: m.value, headers, timestamp: Number(m.timestamp) };
}

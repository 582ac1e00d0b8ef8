/**
 * Real server: Kafka. The race in @platformatic/kafka's metadata cache that made the processor
 * exit after a broker stall (platformatic.metadata.ts): a metadata request for a cached topic and
 * a new one, and the cache cleared while it is fetched (as the library does on every
 * stale-metadata error). Unguarded, the answer maps the cached topic to undefined, which the
 * library's own callers read without a check; guarded, the caller gets a retriable error, and the
 * next request answers every topic.
 */
import { Consumer, type ClusterMetadata, Producer } from '@platformatic/kafka';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestKafka, integrationEnv, type TestKafka, uniqueSuffix } from '@ingest/testkit';
import { brokerList } from '../../config.js';
import { completeMetadataAnswers } from './platformatic.metadata.js';

let kafka: TestKafka;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  kafka = await createTestKafka(['eventsRaw', 'eventsUnique']);
});

afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  await kafka?.cleanup();
});

function options() {
  return { clientId: `metadata-race-${uniqueSuffix()}`, bootstrapBrokers: brokerList(integrationEnv().kafkaBrokers), retries: 0 };
}

/** Caches `cached`, then asks for it and `fresh` and clears the cache while the request is out. */
async function raceTheCache(client: Consumer | Producer, cached: string, fresh: string) {
  await client.metadata({ topics: [cached] });
  const answer = await new Promise<{ error: Error | null; metadata?: ClusterMetadata }>((resolve) => {
    client.metadata({ topics: [cached, fresh] }, (error, metadata) => resolve({ error, metadata }));
    client.clearMetadata();
  });
  return answer;
}

describe("@platformatic/kafka's metadata cache cleared while a request is out", () => {
  // When this fails, the library no longer has the defect, and completeMetadataAnswers can go.
  it('answers a cached topic with undefined when unguarded (the library defect this guards against)', async () => {
    const consumer = new Consumer({ ...options(), groupId: `metadata-race-${uniqueSuffix()}` });
    closers.push(async () => consumer.close(true));
    const { error, metadata } = await raceTheCache(consumer, kafka.topic('eventsRaw'), kafka.topic('eventsUnique'));
    expect(error).toBeNull();
    expect(metadata?.topics.has(kafka.topic('eventsRaw'))).toBe(true);
    expect(metadata?.topics.get(kafka.topic('eventsRaw'))).toBeUndefined();
  });

  it.each(['consumer', 'producer'] as const)('guarded, a %s gets a retriable error instead, and every topic on the next request', async (kind) => {
    const client = completeMetadataAnswers(
      kind === 'consumer' ? new Consumer({ ...options(), groupId: `metadata-race-${uniqueSuffix()}` }) : new Producer({ ...options() }),
    );
    closers.push(async () => (client instanceof Consumer ? client.close(true) : client.close()));
    const [cached, fresh] = [kafka.topic('eventsRaw'), kafka.topic('eventsUnique')];
    const { error, metadata } = await raceTheCache(client, cached, fresh);
    expect(metadata).toBeUndefined();
    expect(error?.message).toContain(`lacks ${cached}`);
    expect((error as Error & { canRetry?: boolean }).canRetry).toBe(true);
    const again = await client.metadata({ topics: [cached, fresh] });
    expect([cached, fresh].map((t) => again.topics.get(t)?.partitionsCount)).toEqual([expect.any(Number), expect.any(Number)]);
    expect(again.topics.get(cached)?.partitionsCount).toBeGreaterThan(0);
  });
});

import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { type Component, createMetricsRegistry, createProducer, createRedis, type Producer, type Redis } from '@ingest/platform';
import { type ControlPlane, createControlPlane, createSyncStateStore, type EventSyncState, type MappingReader, uniqueEventKey } from '@ingest/domain';
import type { TopicKey } from '@ingest/platform';
import { CONTROL_PLANE_TOPICS, createTestKafka, integrationEnv, testCredentialKeys, type TestKafka, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import type { CreateAdapter } from './adapters/adapter.js';
import { type CrmSinkDeps, createCrmSink } from './crm-sink.js';

/**
 * What the crm-sink's integration tests share: topics under a fresh prefix, a Redis key prefix,
 * a producer for events.unique, sinks built like main.ts builds them (small windows and retry
 * delays), and the sync states to wait on. `cleanup` stops the sinks and removes what it made.
 */
export interface SinkFixture {
  kafka: TestKafka;
  producer: Producer;
  redis: Redis;
  redisKeyPrefix: string;
  startSink(groupId: string, overrides?: Partial<CrmSinkDeps>): Promise<Component>;
  /**
   * A started control plane on the fixture's topics (with `controlPlane: true`) that seals CRM
   * credentials for crm-sink's test key, as the console writes them; stopped by `cleanup`.
   */
  controlPlane(): ControlPlane;
  event(accountId: string, eventName: string, email: string | null, properties: Record<string, unknown>, minute?: number, domain?: string | null): EventRecord;
  produce(records: EventRecord[], topic?: string): Promise<void>;
  states(records: EventRecord[]): Promise<EventSyncState[]>;
  /** Waits until no event of `records` is pending any more. */
  settled(records: EventRecord[], timeoutMs?: number): Promise<void>;
  cleanup(): Promise<void>;
}

export const T0 = Date.UTC(2026, 10, 20, 12, 0, 0);

/** Parking as in production, with short delays for tests. */
export const TEST_PARK: CrmSinkDeps['park'] = {
  hold: { holdMs: 5_000, maxRetryAfterMs: 60_000 },
  limits: { maxEventsPerAccount: 10_000, maxBytesPerAccount: 16 * 1024 * 1024, maxEventsTotal: 100_000, maxBytesTotal: 64 * 1024 * 1024 },
  maxAgeMs: 10 * 60_000,
  baseDelayMs: 100,
  maxDelayMs: 1_000,
  hangingDelayMs: 1_000,
  pollMs: 100,
  resumeBatch: 200,
  leaseMs: 30_000,
};

export interface SinkFixtureOptions {
  /** Where the sinks read mappings; can be set later (e.g. a control plane on the fixture's topics). */
  mappings?: MappingReader;
  createAdapter: CreateAdapter;
  /** Topics besides the sink's own. */
  extraTopics?: TopicKey[];
  /** Creates every control topic and starts `controlPlane()` on them. */
  controlPlane?: boolean;
}

export async function createSinkFixture(options: SinkFixtureOptions): Promise<SinkFixture> {
  const kafka = await createTestKafka([
    'eventsUnique',
    'crmReplay',
    'crmDeadLetters',
    ...(options.controlPlane ? CONTROL_PLANE_TOPICS : []),
    ...(options.extraTopics ?? []),
  ]);
  const producer = createProducer(kafka.kafka);
  const redisKeyPrefix = `t${uniqueSuffix()}:`;
  const redis = createRedis({ url: integrationEnv().redisUrl });
  await Promise.all([producer.connect(), redis.connect()]);
  const controlPlane = options.controlPlane
    ? createControlPlane({ kafka: kafka.kafka, producer, topicPrefix: kafka.prefix, logger: testLogger(), credentialSealer: testCredentialKeys().sealer })
    : undefined;
  await controlPlane?.start();
  const sinks: Component[] = [];
  const syncStates = createSyncStateStore({ redis, keyPrefix: redisKeyPrefix });
  let seq = 0;

  const fixture: SinkFixture = {
    kafka,
    producer,
    redis,
    redisKeyPrefix,
    controlPlane() {
      if (!controlPlane) throw new Error('createSinkFixture({ controlPlane: true }) starts the control plane');
      return controlPlane;
    },
    async startSink(groupId, overrides = {}) {
      const sink = createCrmSink({
        kafka: kafka.kafka,
        producer,
        redis,
        mappings: overrides.mappings ?? (options.mappings as MappingReader),
        openCredential: testCredentialKeys().opener,
        createAdapter: options.createAdapter,
        logger: testLogger(),
        metrics: createMetricsRegistry('crm-sink-test'),
        topicPrefix: kafka.prefix,
        groupId,
        redisKeyPrefix,
        ttl: { ledgerSeconds: 3600, recordStateSeconds: 3600, syncStateSeconds: 3600 },
        coalesce: { windowMs: 300, maxRecords: 50 },
        rate: { ratePerSecond: 20, burst: 5 },
        retry: { maxAttempts: 5, budgetMs: 30_000, baseDelayMs: 50, maxDelayMs: 400 },
        maxUnfinishedPerPartition: 500,
        partitionsConsumedConcurrently: 3,
        park: TEST_PARK,
        ...overrides,
      });
      sinks.push(sink);
      await sink.start();
      return sink;
    },
    event(accountId, eventName, email, properties, minute = 0, domain = null) {
      seq += 1;
      return {
        v: 1,
        accountId,
        eventId: `evt-${seq}`,
        eventName,
        email,
        domain,
        timestampMs: T0 + minute * 60_000,
        receivedAtMs: Date.now(),
        properties,
        source: 'api',
        jobId: null,
      };
    },
    async produce(records, topic = kafka.topic('eventsUnique')) {
      await producer.send(
        topic,
        records.map((r) => ({ key: uniqueEventKey(r), value: JSON.stringify(r) })),
      );
    },
    states: (records) => Promise.all(records.map((r) => syncStates.read(r.accountId, r.eventId))),
    async settled(records, timeoutMs = 60_000) {
      await waitFor(async () => (await fixture.states(records)).every((s) => s.state !== 'pending'), { description: 'sync states of every event', timeoutMs });
    },
    async cleanup() {
      await Promise.allSettled(sinks.map((s) => s.stop()));
      await controlPlane?.stop();
      const keys = await redis.keys(`${redisKeyPrefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await producer.disconnect();
      await redis.close();
      await kafka.cleanup();
    },
  };
  return fixture;
}

/** A webhook mapping counting `Used` events per contact (`uses`) and keeping the last `n`: once-only and order show in the record. */
export function usesCounterMapping(credentialsRef: string): CrmMapping {
  return {
    version: 1,
    crm: { type: 'webhook', credentialsRef },
    rules: [
      {
        id: 'used',
        when: { eventName: 'Used' },
        object: 'contact',
        actions: [
          { op: 'increment', field: 'uses' },
          { op: 'set', field: 'last', from: { property: 'n' } },
        ],
      },
    ],
  };
}

/** A mapping with every kind of action, for the sink's tests. */
export function everyKindMapping(credentialsRef: string): CrmMapping {
  return {
    version: 1,
    crm: { type: 'hubspot', credentialsRef },
    rules: [
      {
        id: 'signup',
        when: { eventName: 'Signed Up' },
        object: 'contact',
        actions: [
          { op: 'set', field: 'plan', from: { property: 'plan' } },
          { op: 'setOnce', field: 'first_source', from: { property: 'source' } },
          { op: 'min', field: 'first_seen_at', from: { event: 'timestamp' } },
        ],
        activity: { type: 'signup', title: 'Signed up on {{properties.plan}}' },
      },
      {
        id: 'page',
        when: { eventName: 'Page Viewed' },
        object: 'contact',
        actions: [
          { op: 'increment', field: 'page_views' },
          { op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } },
          { op: 'append', field: 'pages', from: { property: 'path' } },
        ],
      },
      {
        id: 'company-signup',
        when: { eventName: 'Signed Up', where: [{ property: 'plan', op: 'neq', value: 'free' }] },
        object: 'company',
        actions: [
          { op: 'set', field: 'plan', from: { property: 'plan' } },
          { op: 'increment', field: 'paid_signups', by: 1 },
        ],
      },
    ],
  };
}

/**
 * What a test that starts gateways, processors or sinks as processes keeps for itself on their
 * stores: its own Redis connection (to read what the services wrote), a producer on the test's
 * Kafka, and a started control plane on the test's topics (to create the accounts, keys,
 * credentials and mappings the services then read at start). Written out once here because the
 * scale, chaos and load-balancer fixtures all need the same three, closed in the reverse order.
 */
import { type ControlPlane, createControlPlane } from '@ingest/domain';
import { type Closeable, createProducer, createRedis, type Producer, type Redis } from '@ingest/platform';
import { testCredentialKeys } from './credential-keys.js';
import { integrationEnv } from './env.js';
import { type TestKafka, testLogger } from './fixtures.js';

export interface ControlPlaneClients {
  redis: Redis & Closeable;
  producer: Producer;
  controlPlane: ControlPlane;
  /** Stops the control plane, then disconnects the producer and closes Redis; each is attempted, the first failure thrown. */
  close(): Promise<void>;
}

/** Connects Redis (REDIS_URL unless `redisUrl`) and a producer, then starts the control plane; on a failure, closes what it opened. */
export async function startControlPlaneClients(kafka: TestKafka, options: { redisUrl?: string } = {}): Promise<ControlPlaneClients> {
  const redis = createRedis({ url: options.redisUrl ?? integrationEnv().redisUrl });
  const producer = createProducer(kafka.kafka);
  const closers: (() => Promise<unknown>)[] = [() => redis.close(), () => producer.disconnect()];
  const close = async () => {
    const results = [];
    for (const c of closers.splice(0).reverse())
      results.push(
        await c().then(
          () => undefined,
          (err: unknown) => ({ err }),
        ),
      );
    const failed = results.find((r) => r !== undefined);
    if (failed) throw failed.err;
  };
  try {
    await Promise.all([redis.connect(), producer.connect()]);
    const controlPlane = createControlPlane({
      kafka: kafka.kafka,
      producer,
      topicPrefix: kafka.prefix,
      logger: testLogger(),
      credentialSealer: testCredentialKeys().sealer,
    });
    await controlPlane.start();
    closers.push(() => controlPlane.stop());
    return { redis, producer, controlPlane, close };
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
}

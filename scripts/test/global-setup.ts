import { INTEGRATION_ENV_HINT } from '@ingest/shared/testing';

/**
 * Vitest global setup of the `integration` project. Real servers only: the ones named by
 * KAFKA_BROKERS / CLICKHOUSE_URL / REDIS_URL (what `scripts/test.sh` exports after starting the
 * local stack), or containers started here when those are unset and a Docker engine answers.
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (process.env.KAFKA_BROKERS && process.env.CLICKHOUSE_URL && process.env.REDIS_URL) return undefined;
  const containers = await startContainers().catch((err: unknown) => {
    throw new Error(`${INTEGRATION_ENV_HINT} (no Docker engine: ${(err as Error).message})`);
  });
  return containers;
}

async function startContainers(): Promise<() => Promise<void>> {
  const { getContainerRuntimeClient } = await import('testcontainers');
  await getContainerRuntimeClient();
  const [{ KafkaContainer }, { ClickHouseContainer }, { RedisContainer }] = await Promise.all([
    import('@testcontainers/kafka'),
    import('@testcontainers/clickhouse'),
    import('@testcontainers/redis'),
  ]);
  const [kafka, clickhouse, redis] = await Promise.all([
    new KafkaContainer('confluentinc/cp-kafka:7.9.0').withKraft().start(),
    new ClickHouseContainer('clickhouse/clickhouse-server:25.8').start(),
    new RedisContainer('redis:7.4').start(),
  ]);
  process.env.KAFKA_BROKERS = `${kafka.getHost()}:${kafka.getMappedPort(9093)}`;
  process.env.CLICKHOUSE_URL = clickhouse.getHttpUrl();
  process.env.REDIS_URL = redis.getConnectionUrl();
  return async () => {
    await Promise.allSettled([kafka.stop(), clickhouse.stop(), redis.stop()]);
  };
}

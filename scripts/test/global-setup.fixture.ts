import { freePort, INTEGRATION_ENV_HINT, projectNodeMajor } from '@ingest/testkit';
import { createClickHouse } from '@ingest/platform';
import { CLICKHOUSE_IMAGE, integrationVariables, kafkaContainerSpec, REDIS_IMAGE, testReaderStatements } from './containers.js';

/**
 * Vitest global setup of the `integration` project. Real servers only: the ones named by
 * KAFKA_BROKERS / CLICKHOUSE_URL / REDIS_URL (what `scripts/test.sh` exports after starting the
 * local stack), or containers started here when those are unset and a Docker engine answers.
 * No Docker engine runs on the machines this project is developed and checked on, so this path
 * is exercised only where one does (its container descriptions are unit-tested).
 */
export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  // The services built in-process and the processes spawned run on this Node: the project's.
  if (process.versions.node.split('.')[0] !== projectNodeMajor()) {
    throw new Error(
      `the tests run on Node ${process.version}; the project's runtime is Node ${projectNodeMajor()} (.nvmrc): run \`npm test\`, which installs it`,
    );
  }
  if (process.env.KAFKA_BROKERS && process.env.CLICKHOUSE_URL && process.env.REDIS_URL) return undefined;
  const containers = await startContainers().catch((err: unknown) => {
    throw new Error(`${INTEGRATION_ENV_HINT} (no Docker engine: ${(err as Error).message})`);
  });
  return containers;
}

async function startContainers(): Promise<() => Promise<void>> {
  const { GenericContainer, getContainerRuntimeClient, Wait } = await import('testcontainers');
  await getContainerRuntimeClient();
  const [{ ClickHouseContainer }, { RedisContainer }] = await Promise.all([import('@testcontainers/clickhouse'), import('@testcontainers/redis')]);
  const kafkaSpec = kafkaContainerSpec(await freePort());
  const [kafka, clickhouse, redis] = await Promise.all([
    new GenericContainer(kafkaSpec.image)
      .withEnvironment(kafkaSpec.env)
      .withExposedPorts(...kafkaSpec.ports)
      .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
      .start(),
    // SQL users: the gateway's read-only user is created below.
    new ClickHouseContainer(CLICKHOUSE_IMAGE).withEnvironment({ CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT: '1' }).start(),
    new RedisContainer(REDIS_IMAGE).start(),
  ]);
  const admin = createClickHouse({ url: clickhouse.getHttpUrl(), username: clickhouse.getUsername(), password: clickhouse.getPassword() });
  try {
    for (const statement of testReaderStatements()) await admin.command(statement);
  } finally {
    await admin.close();
  }
  Object.assign(
    process.env,
    integrationVariables({
      kafkaHostPort: kafkaSpec.ports[0]?.host ?? 0,
      clickhouseUrl: clickhouse.getHttpUrl(),
      clickhouseUser: clickhouse.getUsername(),
      clickhousePassword: clickhouse.getPassword(),
      redisUrl: redis.getConnectionUrl(),
    }),
  );
  return async () => {
    await Promise.allSettled([kafka.stop(), clickhouse.stop(), redis.stop()]);
  };
}

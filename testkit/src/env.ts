/**
 * Where the real servers of integration tests are. `scripts/test.sh` starts the local stack
 * and exports these; the vitest global setup starts containers instead when they are unset and
 * a Docker engine answers.
 */
import { DEFAULT_KAFKA_DRIVER } from '@ingest/platform';
import { KAFKA_DRIVERS, type KafkaDriverName } from '@ingest/platform';

export interface IntegrationEnv {
  kafkaBrokers: string;
  /** KAFKA_DRIVER: the Kafka library the tests' clients (and the services they start) use. */
  kafkaDriver: KafkaDriverName;
  clickhouseUrl: string;
  /** CLICKHOUSE_USER / CLICKHOUSE_PASSWORD; the local stack's `default` user has no password. */
  clickhouseUser: string;
  clickhousePassword: string;
  /**
   * The gateway's read-only user (readonly = 1): CLICKHOUSE_READER_USER / CLICKHOUSE_READER_PASSWORD,
   * by default the one the local stack's users.xml defines (or `npm run setup` creates on a current server).
   */
  clickhouseReader: { user: string; password: string };
  /** CLICKHOUSE_CLUSTER: test databases are made ON CLUSTER, replicated (the scale tests; docs/scale.md). */
  clickhouseCluster?: string;
  redisUrl: string;
}

/** The seen-id memory's key every service a test starts shares (SEEN_IDS_HMAC_KEY), as replicas of one deployment do. */
export const TEST_SEEN_IDS_KEY = 'test-seen-ids-hmac-key-0123456789abcdef';

export const INTEGRATION_ENV_HINT =
  'integration tests need KAFKA_BROKERS, CLICKHOUSE_URL and REDIS_URL: run `npm test` (it starts the local stack), or `bash scripts/stack.sh up` and export the variables it prints, or run a Docker engine so the tests can start containers';

export function integrationEnv(env: Record<string, string | undefined> = process.env): IntegrationEnv {
  const { KAFKA_BROKERS, CLICKHOUSE_URL, REDIS_URL, KAFKA_DRIVER } = env;
  if (!KAFKA_BROKERS || !CLICKHOUSE_URL || !REDIS_URL) throw new Error(INTEGRATION_ENV_HINT);
  const kafkaDriver = (KAFKA_DRIVER || DEFAULT_KAFKA_DRIVER) as KafkaDriverName;
  if (!KAFKA_DRIVERS.includes(kafkaDriver)) throw new Error(`KAFKA_DRIVER must be one of ${KAFKA_DRIVERS.join(', ')}, got ${KAFKA_DRIVER}`);
  return {
    kafkaBrokers: KAFKA_BROKERS,
    kafkaDriver,
    clickhouseUrl: CLICKHOUSE_URL,
    clickhouseUser: env.CLICKHOUSE_USER || 'default',
    clickhousePassword: env.CLICKHOUSE_PASSWORD ?? '',
    clickhouseReader: { user: env.CLICKHOUSE_READER_USER || 'ingest_reader', password: env.CLICKHOUSE_READER_PASSWORD ?? 'ingest-reader-local' },
    redisUrl: REDIS_URL,
    ...(env.CLICKHOUSE_CLUSTER ? { clickhouseCluster: env.CLICKHOUSE_CLUSTER } : {}),
  };
}

/**
 * The Kafka drivers each chaos scenario of several drivers runs with (broker stall, broker
 * restart, liveness): in `npm test` the default driver only; `CHAOS_KAFKA_DRIVERS=all` every one,
 * or a comma-separated list. `npm run test:scale` runs the other driver's halves
 * (scripts/test-scale.sh): they took ~115 s of the CI budget in `npm test`, for a driver that is
 * not the default (docs/development.md, "Test commands").
 */
export function chaosKafkaDrivers(env: Record<string, string | undefined> = process.env): KafkaDriverName[] {
  const wanted = env.CHAOS_KAFKA_DRIVERS?.trim();
  if (!wanted) return [DEFAULT_KAFKA_DRIVER];
  if (wanted === 'all') return [...KAFKA_DRIVERS];
  const names = wanted.split(',').map((n) => n.trim());
  const unknown = names.filter((n) => !(KAFKA_DRIVERS as readonly string[]).includes(n));
  if (unknown.length > 0) throw new Error(`CHAOS_KAFKA_DRIVERS: unknown driver ${unknown.join(', ')} (drivers: ${KAFKA_DRIVERS.join(', ')}, or all)`);
  return names as KafkaDriverName[];
}

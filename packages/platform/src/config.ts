import { type Static, type TObject, type TProperties, Type } from '@sinclair/typebox';
import envSchema from 'env-schema';
import { AppError } from './errors.js';
import { DEFAULT_KAFKA_DRIVER } from './kafka/defaults.js';
import { COMPRESSIONS, KAFKA_DRIVERS } from './kafka/driver.js';
import { KafkaSecurityConfig } from './kafka/security.js';

/**
 * Configuration is read from the environment once, in a service's main.ts, validated against a
 * TypeBox schema whose property names are the environment variable names. Nothing else reads
 * process.env, so the schema is the complete list of knobs (and the table of docs/configuration.md).
 */
export function loadConfig<S extends TObject>(schema: S, env: Record<string, string | undefined> = process.env): Static<S> {
  try {
    return envSchema<Static<S>>({ schema, data: env, env: false, dotenv: false });
  } catch (err) {
    // ajv's message names the variable, e.g. "env/KAFKA_BROKERS must NOT have fewer than 1 characters".
    throw new AppError('invalid_config', `invalid configuration: ${(err as Error).message}`, { cause: err });
  }
}

/** Schema fragments shared by the services; a service composes the ones it needs. */
export const CommonConfig = {
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info' },
  ),
  SHUTDOWN_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 15_000 }),
} satisfies TProperties;

export const KafkaConfig = {
  KAFKA_BROKERS: Type.String({ minLength: 1, default: '127.0.0.1:9092' }),
  KAFKA_CLIENT_ID: Type.String({ minLength: 1, default: 'event-ingestion' }),
  /** Prepended to every topic name; lets tests and parallel environments share one broker. */
  KAFKA_TOPIC_PREFIX: Type.String({ default: '', pattern: '^[A-Za-z0-9._-]*$' }),
  /** The Kafka client library behind the wrapper (docs/kafka.md says why the default). */
  KAFKA_DRIVER: Type.Union(
    KAFKA_DRIVERS.map((d) => Type.Literal(d)),
    { default: DEFAULT_KAFKA_DRIVER },
  ),
  /**
   * Compression of every producer. lz4 needs KAFKA_DRIVER=platformatic (kafkajs has no lz4 codec
   * without a native add-on, so a kafkajs consumer could not read it either); zstd needs Node 22+.
   */
  KAFKA_COMPRESSION: Type.Union(
    COMPRESSIONS.map((c) => Type.Literal(c)),
    { default: 'none' },
  ),
  /** A consumer that misses heartbeats this long is dropped from its group (the broker allows 6 s to 30 min). */
  KAFKA_SESSION_TIMEOUT_MS: Type.Integer({ minimum: 6_000, maximum: 1_800_000, default: 30_000 }),
  /** A consumer that cannot rejoin its group for this long fails the service's liveness (/healthz). */
  KAFKA_CONSUMER_DEAD_AFTER_MS: Type.Integer({ minimum: 1_000, default: 300_000 }),
  /**
   * A write still waiting for its turn this long is dropped, unwritten (the gateway answers 503;
   * docs/kafka.md, "What 503 means"). Also how long a send waits for a new producer after a
   * failed one, and how long a send may be in flight before /readyz says the producer is stuck.
   */
  KAFKA_SEND_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 5_000 }),
  /**
   * A write already sent to Kafka is waited for this long from its start; without an answer by
   * then it fails as "outcome unknown" (the gateway answers 504: the events may be stored). Keep
   * it below the gateway's HTTP request timeout.
   */
  KAFKA_IN_FLIGHT_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 30_000 }),
  /**
   * A producer that has not been able to send for this long (failed sends, no new producer could
   * connect) fails the service's liveness (/healthz), so the orchestrator restarts it.
   */
  KAFKA_PRODUCER_DEAD_AFTER_MS: Type.Integer({ minimum: 1_000, default: 300_000 }),
  /**
   * Replication of the topics (setup creates them so; docs/kafka.md, "Replication"): 1/1 on the
   * single local broker, 3/2 on a cluster. The services read them for /readyz's `kafka-brokers`:
   * fewer live brokers than expected is `degraded`, fewer than min.insync.replicas not ready.
   */
  KAFKA_REPLICATION_FACTOR: Type.Integer({ minimum: 1, default: 1 }),
  KAFKA_MIN_INSYNC_REPLICAS: Type.Integer({ minimum: 1, default: 1 }),
  /** TLS and SASL (kafka/security.ts, docs/security.md). */
  ...KafkaSecurityConfig,
} satisfies TProperties;

/** Services that read the control plane (gateway, crm-sink). */
export const ControlPlaneConfig = {
  /** The control plane not confirmed caught up with its topics this long: /readyz fails. */
  CONTROL_PLANE_STALE_AFTER_MS: Type.Integer({ minimum: 300, default: 30_000 }),
  /** ...and this long: /healthz fails (the orchestrator restarts the process). */
  CONTROL_PLANE_DEAD_AFTER_MS: Type.Integer({ minimum: 1_000, default: 300_000 }),
} satisfies TProperties;

export const ClickHouseConfig = {
  CLICKHOUSE_URL: Type.String({ minLength: 1, default: 'http://127.0.0.1:8123' }),
  CLICKHOUSE_USER: Type.String({ default: 'default' }),
  CLICKHOUSE_PASSWORD: Type.String({ default: '' }),
  CLICKHOUSE_DATABASE: Type.String({ default: 'ingest', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
} satisfies TProperties;

export const RedisConfig = {
  /** redis://[user:password@]host:port, or rediss:// for TLS; the password (and an ACL user) go here. */
  REDIS_URL: Type.String({ minLength: 1, default: 'redis://127.0.0.1:6379' }),
  /** PEM file of the CA that signed Redis's certificate (rediss:// with a private CA); empty: the system's CAs. */
  REDIS_TLS_CA_FILE: Type.String({ default: '' }),
  /** Prepended to every Redis key of the allowance and job status; like KAFKA_TOPIC_PREFIX. */
  REDIS_KEY_PREFIX: Type.String({ default: '', pattern: '^[A-Za-z0-9._:-]*$' }),
} satisfies TProperties;

export function brokerList(brokers: string): string[] {
  return brokers
    .split(',')
    .map((b) => b.trim())
    .filter((b) => b.length > 0);
}

/**
 * One way to start a service: logger, metrics, the Kafka client and producer, Redis (and
 * ClickHouse when asked) from the service's config; connect; let the service build its parts;
 * then the ops server (/healthz, /readyz, /metrics), graceful shutdown with a hard deadline, and
 * one "running" line. Each service's main.ts is its config and its parts, nothing else.
 */
import { createBrokerWatch } from './kafka/broker-watch.js';
import { openKafkaClientFromConfig, type Compression, type KafkaClient, type KafkaClientConfig } from './kafka/client.js';
import { createProducer, type Producer, type ProducerOptions } from './kafka/producer.js';
import { type TopicKey, topicName } from './kafka/topics.js';
import { type Closeable, type Component, createServiceRunner, type ServiceRunner } from './lifecycle.js';
import { createLogger, type Logger } from './logger.js';
import { createMetricsRegistry, METRIC_NAMES, type Registry, sharedCounter } from './metrics.js';
import { createOpsServer, unhealthy } from './ops.server.js';
import { connectRedis, createRedis, type Redis, readRedisTlsCa } from './redis.js';

/** How /readyz names the producer while it cannot send. */
export const PRODUCER_PART = 'kafka-producer';

/** The settings every service has (CommonConfig, KafkaConfig and RedisConfig of config.ts). */
export interface LaunchConfig extends KafkaClientConfig {
  LOG_LEVEL: string;
  SHUTDOWN_TIMEOUT_MS: number;
  KAFKA_TOPIC_PREFIX: string;
  KAFKA_COMPRESSION: Compression;
  KAFKA_SEND_TIMEOUT_MS: number;
  KAFKA_IN_FLIGHT_TIMEOUT_MS: number;
  KAFKA_PRODUCER_DEAD_AFTER_MS: number;
  KAFKA_REPLICATION_FACTOR: number;
  KAFKA_MIN_INSYNC_REPLICAS: number;
  REDIS_URL: string;
  REDIS_TLS_CA_FILE: string;
}

/** What every service gets before it builds its parts; the clients are connected. */
export interface ServiceContext<C extends LaunchConfig> {
  config: C;
  logger: Logger;
  metrics: Registry;
  kafka: KafkaClient;
  producer: Producer;
  redis: Redis;
  /** `<KAFKA_TOPIC_PREFIX><name>` of a topic. */
  topic(key: TopicKey): string;
  /** The service's liveness once it runs (for parts that report it, e.g. an ops endpoint). */
  alive(): boolean;
}

export interface ServiceParts {
  /** Started in this order after the ops server, stopped together on shutdown. */
  components: Component[];
  /** What /readyz waits for (empty: ready); default: the components that are not healthy. */
  waitingFor?: () => string[];
  /** What /readyz lists as `degraded` besides the brokers (the service stays ready), e.g. a ClickHouse replica. */
  degraded?: () => string[];
  /** More clients to close after the components (the launcher's own are closed anyway). */
  clients?: Closeable[];
  /** Added to the "running" log line (listener addresses). */
  running?: () => Record<string, unknown>;
}

export interface LaunchOptions<C extends LaunchConfig> {
  /** `gateway`, `processor`, `crm-sink`: the log's and the metrics' `service`, the Kafka client's role. */
  service: string;
  config: C;
  ops: { host: string; port: number };
  /** The producer's bound on queued bytes (its deadlines and compression come from the config). */
  producer?: Pick<ProducerOptions, 'maxQueuedBytes'>;
  /** Fail Redis commands at once while it is away (request paths answer 503 at once). */
  redisFailFast?: boolean;
  build(context: ServiceContext<C>): Promise<ServiceParts>;
}

export interface LaunchedService<C extends LaunchConfig> {
  context: ServiceContext<C>;
  runner: ServiceRunner;
}

/** Starts the service and installs the signal handlers; resolves once every part runs. */
export async function launchService<C extends LaunchConfig>(options: LaunchOptions<C>): Promise<LaunchedService<C>> {
  const { config, service } = options;
  const logger = createLogger({ service, level: config.LOG_LEVEL as Parameters<typeof createLogger>[0]['level'] });
  const metrics = createMetricsRegistry(service);
  // A refused password or an untrusted certificate ends the start here, naming the setting.
  const kafka = await openKafkaClientFromConfig(config, service, logger);
  const producerRenewals = sharedCounter(metrics, {
    name: METRIC_NAMES.kafkaProducerRenewals,
    help: 'Kafka producers replaced by a new producer id after a failed send, by the code of the failure (docs/kafka.md)',
    labelNames: ['reason'] as const,
  });
  // Zero series for the usual reasons, so an alert's increase() sees the first one.
  for (const reason of ['kafka_outcome_unknown', 'kafka_unavailable', 'kafka_producer_state', 'kafka_error']) producerRenewals.inc({ reason }, 0);
  const producer = createProducer(kafka, {
    ...options.producer,
    compression: config.KAFKA_COMPRESSION,
    sendTimeoutMs: config.KAFKA_SEND_TIMEOUT_MS,
    inFlightTimeoutMs: config.KAFKA_IN_FLIGHT_TIMEOUT_MS,
    deadAfterMs: config.KAFKA_PRODUCER_DEAD_AFTER_MS,
    logger,
    onRenewed: (reason) => producerRenewals.inc({ reason }),
  });
  const redis = createRedis({
    url: config.REDIS_URL,
    failFast: options.redisFailFast ?? false,
    logger,
    metrics,
    tlsCa: readRedisTlsCa(config.REDIS_TLS_CA_FILE),
  });
  // Set once every part is built; liveness reads it from then on.
  const started: { runner?: ServiceRunner } = {};
  const context: ServiceContext<C> = {
    config,
    logger,
    metrics,
    kafka,
    producer,
    redis,
    topic: (key) => topicName(config.KAFKA_TOPIC_PREFIX, key),
    alive: () => producer.alive() && (started.runner?.alive() ?? true),
  };

  await Promise.all([producer.connect(), connectRedis(redis)]);
  // Lost brokers: degraded while writes go on, not ready below min.insync.replicas (docs/scale.md).
  const brokers = createBrokerWatch({
    kafka,
    replicationFactor: config.KAFKA_REPLICATION_FACTOR,
    minInsyncReplicas: config.KAFKA_MIN_INSYNC_REPLICAS,
    registry: metrics,
    logger,
  });
  const parts = await options.build(context);
  const ops = createOpsServer({
    host: options.ops.host,
    port: options.ops.port,
    metrics,
    // A service that cannot write to Kafka cannot do its work, whatever its parts say; nor one
    // whose Redis connection is down or refused (the gateway then answers 503 to every event:
    // allowance and limits live there), which /readyz once hid behind a 200.
    waitingFor: () => [
      ...(producer.ready() ? [] : [PRODUCER_PART]),
      ...brokers.waitingFor(),
      ...redis.waitingFor(),
      ...(parts.waitingFor ?? (() => unhealthy(parts.components)))(),
    ],
    degraded: () => [...brokers.degraded(), ...(parts.degraded?.() ?? [])],
    live: context.alive,
    logger,
  });
  const runner = createServiceRunner({
    logger,
    components: [ops, brokers, ...parts.components],
    clients: [{ name: 'kafka-producer', close: () => producer.disconnect() }, redis, ...(parts.clients ?? [])],
    shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  });
  started.runner = runner;
  runner.installSignalHandlers();
  await runner.start();
  logger.info({ ops: ops.address(), ...parts.running?.() }, `${service} running`);
  return { context, runner };
}

import {
  createClickHouseFromConfig,
  createControlPlane,
  createJobStatusStore,
  openKafkaClientFromConfig,
  createLogger,
  createMetricsRegistry,
  createOpsServer,
  createProducer,
  createRedis,
  createServiceRunner,
  topicName,
} from '@ingest/shared';
import { buildAdminApp } from './admin/admin.app.js';
import { buildApp } from './app.js';
import { loadGatewayConfig } from './config.js';
import { httpServerComponent } from './http/http-server.js';

const config = loadGatewayConfig();
const logger = createLogger({ service: 'gateway', level: config.LOG_LEVEL });
const metrics = createMetricsRegistry('gateway');
const kafka = await openKafkaClientFromConfig(config, 'gateway', logger);
const producer = createProducer(kafka, {
  sendTimeoutMs: config.KAFKA_SEND_TIMEOUT_MS,
  inFlightTimeoutMs: config.KAFKA_IN_FLIGHT_TIMEOUT_MS,
  maxQueuedBytes: config.KAFKA_MAX_QUEUED_BYTES,
  compression: config.KAFKA_COMPRESSION,
});
// Fail fast: a request that needs Redis while it is away is answered 503 at once.
const redis = createRedis({ url: config.REDIS_URL, failFast: true, logger });
const controlPlane = createControlPlane({
  kafka,
  producer,
  topicPrefix: config.KAFKA_TOPIC_PREFIX,
  logger,
  metrics,
  staleAfterMs: config.CONTROL_PLANE_STALE_AFTER_MS,
  deadAfterMs: config.CONTROL_PLANE_DEAD_AFTER_MS,
});
const ch = createClickHouseFromConfig(config);
const jobStatus = createJobStatusStore({
  redis,
  producer,
  progressTopic: topicName(config.KAFKA_TOPIC_PREFIX, 'jobProgress'),
  keyPrefix: config.REDIS_KEY_PREFIX,
});

await Promise.all([producer.connect(), redis.connect()]);
const app = await buildApp({ config, logger, metrics, producer, redis, controlPlane, jobStatus, ch, kafka });
const http = httpServerComponent(app, config.GATEWAY_HOST, config.GATEWAY_PORT);
// The admin API on a listener of its own (loopback by default), only when it has a token.
const admin = config.ADMIN_TOKEN
  ? httpServerComponent(
      await buildAdminApp({ config, logger, metrics, redis, controlPlane, producer, ch }),
      config.ADMIN_HOST,
      config.ADMIN_PORT,
      'admin-http-server',
    )
  : undefined;
const ops = createOpsServer({
  host: config.GATEWAY_OPS_HOST,
  port: config.GATEWAY_OPS_PORT,
  metrics,
  ready: () => controlPlane.caughtUp() && controlPlane.fresh() && http.healthy(),
  live: () => runner.alive(),
  logger,
});
const runner = createServiceRunner({
  logger,
  // The control plane first: the API must not answer before it knows the keys.
  components: [ops, controlPlane, http, ...(admin ? [admin] : [])],
  clients: [{ name: 'kafka-producer', close: () => producer.disconnect() }, redis, ch],
  shutdownTimeoutMs: config.SHUTDOWN_TIMEOUT_MS,
});
runner.installSignalHandlers();
await runner.start();
logger.info({ api: http.url(), ops: ops.address(), ...(admin ? { admin: admin.url() } : {}) }, 'gateway running');

import {
  createClickHouseFromConfig,
  createControlPlane,
  createJobStatusStore,
  createKafkaClient,
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
const kafka = createKafkaClient({ brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-gateway`, logger });
const producer = createProducer(kafka, { sendTimeoutMs: config.KAFKA_SEND_TIMEOUT_MS });
// Fail fast: a request that needs Redis while it is away is answered 503 at once.
const redis = createRedis({ url: config.REDIS_URL, failFast: true, logger });
const controlPlane = createControlPlane({ kafka, producer, topicPrefix: config.KAFKA_TOPIC_PREFIX, logger, metrics });
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
  ready: () => controlPlane.caughtUp() && http.healthy(),
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

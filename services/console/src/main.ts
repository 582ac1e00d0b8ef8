import { createClickHouseFromConfig, launchService, waitingFor } from '@ingest/platform';
import { controlPlaneConditions, createControlPlane, createJobStatusStore, credentialSealerFromConfig, SEEN_IDS_KEY_GENERATED_WARNING } from '@ingest/domain';
import { httpServerComponent } from '@ingest/http';
import { buildAdminApp, buildConsoleApp, loadConsoleConfig } from './index.js';

const config = loadConsoleConfig();
// crm-sink's public key: the admin API and the dashboard seal CRM credentials, and can open none.
const credentialSealer = credentialSealerFromConfig(config);
await launchService({
  service: 'console',
  config,
  ops: { host: config.CONSOLE_OPS_HOST, port: config.CONSOLE_OPS_PORT },
  producer: { maxQueuedBytes: config.KAFKA_MAX_QUEUED_BYTES },
  // Fail fast: a request that needs Redis while it is away is answered 503 at once.
  redisFailFast: true,
  async build({ logger, metrics, kafka, producer, redis, topic }) {
    if (config.SEEN_IDS_HMAC_KEY === '') logger.warn(SEEN_IDS_KEY_GENERATED_WARNING);
    const controlPlane = createControlPlane({
      kafka,
      producer,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
      logger,
      metrics,
      staleAfterMs: config.CONTROL_PLANE_STALE_AFTER_MS,
      deadAfterMs: config.CONTROL_PLANE_DEAD_AFTER_MS,
      credentialSealer,
    });
    const ch = createClickHouseFromConfig(config);
    // Erasures delete rows: their own user when the console's reads only (CLICKHOUSE_ERASURE_USER).
    const erasureCh =
      config.CLICKHOUSE_ERASURE_USER === ''
        ? undefined
        : createClickHouseFromConfig({ ...config, CLICKHOUSE_USER: config.CLICKHOUSE_ERASURE_USER, CLICKHOUSE_PASSWORD: config.CLICKHOUSE_ERASURE_PASSWORD });
    const jobStatus = createJobStatusStore({ redis, producer, progressTopic: topic('jobProgress'), keyPrefix: config.REDIS_KEY_PREFIX });
    const app = await buildConsoleApp({ config, logger, metrics, producer, redis, controlPlane, jobStatus, ch, kafka });
    const http = httpServerComponent(app, config.CONSOLE_HOST, config.CONSOLE_PORT);
    // The admin API on a listener of its own (loopback by default), only with a token.
    const admin = config.ADMIN_TOKEN
      ? httpServerComponent(
          await buildAdminApp({ config, logger, metrics, redis, controlPlane, producer, ch, kafka, ...(erasureCh ? { erasureCh } : {}) }),
          config.ADMIN_HOST,
          config.ADMIN_PORT,
          'admin-http-server',
        )
      : undefined;
    return {
      // The control plane first: the dashboard must not answer before it knows the keys and owners.
      components: [controlPlane, http, ...(admin ? [admin] : [])],
      waitingFor: () => waitingFor(controlPlaneConditions(controlPlane), [http]),
      clients: [ch, ...(erasureCh ? [erasureCh] : [])],
      running: () => ({ dashboard: `${http.url()}/dashboard/`, ...(admin ? { admin: admin.url() } : {}) }),
    };
  },
});

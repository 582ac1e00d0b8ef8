import { createClickHouseFromConfig, launchService, waitingFor } from '@ingest/platform';
import { controlPlaneConditions, createControlPlane, createJobStatusStore, credentialSealerFromConfig } from '@ingest/domain';
import { buildAdminApp } from './admin/admin.app.js';
import { buildApp } from './app.js';
import { gatewayServes, loadGatewayConfig } from './config.js';
import { httpServerComponent } from './http/http-server.js';

const config = loadGatewayConfig();
const serves = gatewayServes(config.GATEWAY_ROLE);
// crm-sink's public key: the admin API and the dashboard seal CRM credentials, and can open
// none. An ingest gateway stores no credential and needs no key (its pods do not mount one).
const credentialSealer = serves.console ? credentialSealerFromConfig(config) : undefined;
await launchService({
  service: 'gateway',
  config,
  ops: { host: config.GATEWAY_OPS_HOST, port: config.GATEWAY_OPS_PORT },
  producer: { maxQueuedBytes: config.KAFKA_MAX_QUEUED_BYTES },
  // Fail fast: a request that needs Redis while it is away is answered 503 at once.
  redisFailFast: true,
  async build({ logger, metrics, kafka, producer, redis, topic }) {
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
    const jobStatus = createJobStatusStore({ redis, producer, progressTopic: topic('jobProgress'), keyPrefix: config.REDIS_KEY_PREFIX });
    const app = await buildApp({ config, logger, metrics, producer, redis, controlPlane, jobStatus, ch, kafka });
    const http = httpServerComponent(app, config.GATEWAY_HOST, config.GATEWAY_PORT);
    // The admin API on a listener of its own (loopback by default), only on a gateway that
    // serves the console and has a token (config.ts refuses a token on an ingest gateway).
    const admin =
      gatewayServes(config.GATEWAY_ROLE).console && config.ADMIN_TOKEN
        ? httpServerComponent(
            await buildAdminApp({ config, logger, metrics, redis, controlPlane, producer, ch }),
            config.ADMIN_HOST,
            config.ADMIN_PORT,
            'admin-http-server',
          )
        : undefined;
    return {
      // The control plane first: the API must not answer before it knows the keys.
      components: [controlPlane, http, ...(admin ? [admin] : [])],
      waitingFor: () => waitingFor(controlPlaneConditions(controlPlane), [http]),
      clients: [ch],
      running: () => ({ role: config.GATEWAY_ROLE, api: http.url(), ...(admin ? { admin: admin.url() } : {}) }),
    };
  },
});

import { controlTopicsRead, createClickHouseFromConfig, launchService, waitingFor } from '@ingest/platform';
import { controlPlaneConditions, createControlPlane, createJobStatusStore, SEEN_IDS_KEY_GENERATED_WARNING } from '@ingest/domain';
import { httpServerComponent } from '@ingest/http';
import { buildApp, gatewayDeprecations, loadGatewayConfig } from './index.js';

// The ingestion API (/v1) only: the dashboard and the admin API are the console service. It
// stores no CRM credential, so it needs no sealing key (its pods do not mount one).
const config = loadGatewayConfig();
await launchService({
  service: 'gateway',
  config,
  ops: { host: config.GATEWAY_OPS_HOST, port: config.GATEWAY_OPS_PORT },
  producer: { maxQueuedBytes: config.KAFKA_MAX_QUEUED_BYTES },
  // Fail fast: a request that needs Redis while it is away is answered 503 at once.
  redisFailFast: true,
  async build({ logger, metrics, kafka, producer, redis, topic }) {
    for (const note of gatewayDeprecations(config)) logger.warn(note);
    if (config.SEEN_IDS_HMAC_KEY === '') logger.warn(SEEN_IDS_KEY_GENERATED_WARNING);
    const controlPlane = createControlPlane({
      kafka,
      producer,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
      logger,
      metrics,
      // Accounts and API keys only, what the ingest principal may read (kafka/acls.ts): owners'
      // password hashes, mappings, CRM credentials and admins never reach the public API's memory.
      readTopics: controlTopicsRead('ingest'),
      staleAfterMs: config.CONTROL_PLANE_STALE_AFTER_MS,
      deadAfterMs: config.CONTROL_PLANE_DEAD_AFTER_MS,
    });
    const ch = createClickHouseFromConfig(config);
    const jobStatus = createJobStatusStore({ redis, producer, progressTopic: topic('jobProgress'), keyPrefix: config.REDIS_KEY_PREFIX });
    const app = await buildApp({ config, logger, metrics, producer, redis, controlPlane, jobStatus, ch });
    const http = httpServerComponent(app, config.GATEWAY_HOST, config.GATEWAY_PORT);
    return {
      // The control plane first: the API must not answer before it knows the keys.
      components: [controlPlane, http],
      waitingFor: () => waitingFor(controlPlaneConditions(controlPlane), [http]),
      clients: [ch],
      running: () => ({ api: http.url() }),
    };
  },
});

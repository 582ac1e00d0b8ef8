import {
  controlPlaneConditions,
  createControlPlane,
  createCredentialOpener,
  createOutboundPolicy,
  createSuppressionList,
  createTokenHttp,
  credentialKeyringFromConfig,
  oauthAppsFromConfig,
} from '@ingest/domain';
import { controlTopicsRead, createLagCollector, launchService, waitingFor } from '@ingest/platform';
import { createAdapter, createConnectionChannel, createCredentialsCheck, createCrmSink, loadCrmSinkConfig } from './index.js';

const config = loadCrmSinkConfig();
// Only crm-sink holds the private keys that open CRM credentials (docs/security.md).
const keyring = credentialKeyringFromConfig(config);
const allowPlaintext = config.CRM_CREDENTIALS_ALLOW_PLAINTEXT;
const oauthApps = oauthAppsFromConfig(config);
await launchService({
  service: 'crm-sink',
  config,
  ops: { host: config.CRM_SINK_OPS_HOST, port: config.CRM_SINK_OPS_PORT },
  async build({ logger, metrics, kafka, producer, redis, topic }) {
    // The sink applies the newest mapping version only: it keeps no history in memory.
    const controlPlane = createControlPlane({
      kafka,
      producer,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
      logger,
      metrics,
      instanceId: 'crm-sink',
      mappingVersionsKept: 1,
      // Only what it syncs by, and accounts (a suspended account's sync is held): it never sees
      // keys or owners (its Kafka principal may not read them; kafka/acls.ts).
      readTopics: controlTopicsRead('crm-sink'),
      staleAfterMs: config.CONTROL_PLANE_STALE_AFTER_MS,
      deadAfterMs: config.CONTROL_PLANE_DEAD_AFTER_MS,
    });
    const outboundPolicy = createOutboundPolicy({ allowHttp: config.CRM_ALLOW_HTTP, allowedCidrs: config.CRM_ALLOWED_CIDRS });
    const openCredential = createCredentialOpener({ keyring, allowPlaintext });
    const tokenHttp = createTokenHttp({
      policy: outboundPolicy,
      timeoutMs: config.CRM_OAUTH_HTTP_TIMEOUT_MS,
      connectTimeoutMs: config.CRM_HTTP_CONNECT_TIMEOUT_MS,
    });
    // Erased people and companies are not synced again (docs/erasure.md).
    const erasures = createSuppressionList({ kafka, topic: topic('erasures'), logger });
    const sink = createCrmSink({
      kafka,
      producer,
      redis,
      mappings: controlPlane,
      openCredential,
      accounts: controlPlane,
      erasures,
      oauth: {
        apps: oauthApps,
        keyring,
        send: tokenHttp.send,
        // The lease outlives a token call, so a second refresh with the same refresh token cannot start.
        leaseMs: config.CRM_OAUTH_HTTP_TIMEOUT_MS + 5_000,
        waitMs: config.CRM_OAUTH_HTTP_TIMEOUT_MS + 2_000,
        revokePollMs: config.CRM_OAUTH_REVOKE_POLL_MS,
      },
      createAdapter: (credential, bearer) =>
        createAdapter(credential, {
          ...(bearer ? { bearer } : {}),
          connectTimeoutMs: config.CRM_HTTP_CONNECT_TIMEOUT_MS,
          headersTimeoutMs: config.CRM_HTTP_TIMEOUT_MS,
          bodyTimeoutMs: config.CRM_HTTP_TIMEOUT_MS,
          requestTimeoutMs: config.CRM_HTTP_REQUEST_TIMEOUT_MS,
          maxResponseBytes: config.CRM_HTTP_MAX_RESPONSE_BYTES,
          outboundPolicy,
        }),
      logger,
      metrics,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
      groupId: config.CRM_SINK_GROUP,
      redisKeyPrefix: config.REDIS_KEY_PREFIX,
      ttl: {
        ledgerSeconds: config.CRM_LEDGER_TTL_SECONDS,
        recordStateSeconds: config.CRM_RECORD_STATE_TTL_SECONDS,
        syncStateSeconds: config.CRM_SYNC_STATE_TTL_SECONDS,
      },
      coalesce: { windowMs: config.CRM_COALESCE_WINDOW_MS, maxRecords: config.CRM_COALESCE_MAX_RECORDS },
      rate: { ratePerSecond: config.CRM_RATE_PER_SECOND, burst: config.CRM_RATE_BURST },
      retry: {
        maxAttempts: config.CRM_RETRY_MAX_ATTEMPTS,
        budgetMs: config.CRM_RETRY_BUDGET_MS,
        baseDelayMs: config.CRM_RETRY_BASE_DELAY_MS,
        maxDelayMs: config.CRM_RETRY_MAX_DELAY_MS,
      },
      maxUnfinishedPerPartition: config.CRM_SINK_MAX_UNFINISHED_PER_PARTITION,
      park: {
        hold: { holdMs: config.CRM_ACCOUNT_HOLD_MS, maxRetryAfterMs: config.CRM_MAX_RETRY_AFTER_MS },
        limits: {
          maxEventsPerAccount: config.CRM_PARK_MAX_EVENTS_PER_ACCOUNT,
          maxBytesPerAccount: config.CRM_PARK_MAX_BYTES_PER_ACCOUNT,
          maxEventsTotal: config.CRM_PARK_MAX_EVENTS_TOTAL,
          maxBytesTotal: config.CRM_PARK_MAX_BYTES_TOTAL,
        },
        maxAgeMs: config.CRM_PARK_MAX_AGE_MS,
        baseDelayMs: config.CRM_RETRY_BASE_DELAY_MS,
        maxDelayMs: config.CRM_PARK_MAX_DELAY_MS,
        // After a hanging call, the abandoned call may run until the whole-call timeout.
        hangingDelayMs: config.CRM_HTTP_REQUEST_TIMEOUT_MS,
        pollMs: config.CRM_PARK_POLL_MS,
        resumeBatch: config.CRM_PARK_RESUME_BATCH,
        leaseMs: config.CRM_PARK_LEASE_MS,
      },
      partitionsConsumedConcurrently: config.CRM_SINK_PARTITIONS_CONCURRENCY,
      identityWait: { waitMs: config.IDENTITY_WAIT_SECONDS * 1000, maxPerAccount: config.IDENTITY_WAIT_MAX_PER_ACCOUNT, pollMs: config.IDENTITY_WAIT_POLL_MS },
      health: {
        alertAfterMs: config.CRM_HEALTH_ALERT_AFTER_MS,
        maxAccounts: config.CRM_HEALTH_METRICS_MAX_ACCOUNTS,
        pollMs: config.CRM_HEALTH_POLL_MS,
      },
    });
    const lag = createLagCollector({ kafka, groupId: config.CRM_SINK_GROUP, topics: [topic('eventsUnique'), topic('crmReplay')], registry: metrics, logger });
    // The console's "test connection" and property reads, answered here where credentials open (docs/crm-sync.md).
    const channelTokens = [config.CRM_SINK_INTERNAL_TOKEN, config.CRM_SINK_INTERNAL_TOKEN_PREVIOUS].filter((t) => t !== '');
    const channel =
      config.CRM_SINK_INTERNAL_TOKEN === ''
        ? []
        : [
            createConnectionChannel({
              host: config.CRM_SINK_INTERNAL_HOST,
              port: config.CRM_SINK_INTERNAL_PORT,
              tokens: channelTokens,
              credentials: controlPlane,
              openCredential,
              bearerFor: (stored, credential) => sink.bearerFor(credential, stored),
              redis,
              redisKeyPrefix: config.REDIS_KEY_PREFIX,
              checksPerMinute: config.CRM_CONNECTION_CHECKS_PER_MINUTE,
              http: {
                connectTimeoutMs: config.CRM_HTTP_CONNECT_TIMEOUT_MS,
                headersTimeoutMs: config.CRM_CONNECTION_CHECK_TIMEOUT_MS,
                bodyTimeoutMs: config.CRM_CONNECTION_CHECK_TIMEOUT_MS,
                requestTimeoutMs: config.CRM_CONNECTION_CHECK_TIMEOUT_MS,
                maxResponseBytes: config.CRM_CONNECTION_CHECK_MAX_RESPONSE_BYTES,
                outboundPolicy,
              },
              logger,
            }),
          ];
    return {
      // The control plane starts first: the sink must know the mappings before its first event.
      components: [
        controlPlane,
        createCredentialsCheck({ credentials: controlPlane, keyring, allowPlaintext, logger, metrics }),
        erasures,
        sink,
        lag,
        ...channel,
        // Last to stop: the sink's refreshes and revocations use its connections until then.
        { name: 'crm-oauth-http', start: async () => undefined, stop: () => tokenHttp.close(), healthy: () => true },
      ],
      waitingFor: () => waitingFor(controlPlaneConditions(controlPlane), [erasures, sink]),
    };
  },
});

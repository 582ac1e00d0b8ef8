import cookie from '@fastify/cookie';
import {
  type AccountJobsReader,
  type Allowance,
  type AuditReader,
  type ControlPlane,
  createOutboundPolicy,
  createRecordStateReader,
  createSyncHealthStore,
  createSyncStateStore,
  createTokenHttp,
  type EventCheck,
  type JobStatusStore,
  oauthAppsFromConfig,
} from '@ingest/domain';
import { type ClickHouse, type KafkaClient, type Producer, type Redis, type Registry } from '@ingest/platform';
import type { FastifyPluginAsync } from 'fastify';
import {
  type Auditor,
  createClickHouseEventStore,
  type IdempotencyStore,
  type IngestMetrics,
  type JobWriter,
  type KeyLastUsedStore,
  ProblemError,
  registerNoStore,
  type TimeSlicer,
  uploadSlotHooks,
  type UploadSlots,
} from '@ingest/http';
import { dashboardAuditRoutes } from './audit.routes.js';
import { connectionsRoutes } from './connections.routes.js';
import { connectionChannelFromConfig } from '../crm/connection-channel.client.js';
import { createMappingCrmCheck } from '../crm/mapping-crm.check.js';
import { crmOAuthRoutes } from './crm-oauth/crm-oauth.routes.js';
import type { ConsoleConfig } from '../config.js';
import { deadLettersRoutes } from './dead-letter.routes.js';
import { dashboardEventsRoutes } from './events.routes.js';
import { dashboardJobsRoutes } from './jobs.routes.js';
import { keysRoutes } from './keys.routes.js';
import { mappingRoutes } from './mapping.routes.js';
import { routeLimits } from './route-options.js';
import { createSessionGuard, dashboardOf } from './session.guard.js';
import { sessionRoutes } from './session.routes.js';
import { createSignInThrottle } from './signin-throttle.js';
import { createKnownDevices } from './known-device.js';
import { consoleSecretKeysFromConfig } from './owner-secret-keys.js';
import { createPasswordHashGate } from './password-hash.gate.js';
import { createSecondFactor } from './second-factor.js';
import { totpRoutes } from './totp.routes.js';
import { createSessionStore } from './session.store.js';
import { dashboardAllowanceRoutes } from './allowance.routes.js';
import { dashboardSyncHealthRoutes } from './sync-health.routes.js';
import { defaultWebDir } from './web-dir.js';
import { webRoutes } from './web.routes.js';

export interface DashboardDeps {
  config: ConsoleConfig;
  controlPlane: ControlPlane;
  redis: Redis;
  allowance: Allowance;
  jobStatus: JobStatusStore & AccountJobsReader;
  ch: ClickHouse;
  keyLastUsed: KeyLastUsedStore;
  /** The gateway's job writer and ingest metrics: CSV uploads share the API's code path. */
  jobs: JobWriter;
  idempotency: IdempotencyStore;
  ingestMetrics: IngestMetrics;
  /** The gateway's concurrent upload slots: the dashboard's uploads count with the API's. */
  uploadSlots: UploadSlots;
  slicer: TimeSlicer;
  metrics: Registry;
  /** The public API's event rules: a mapping dry-run sees the event the sink would. */
  validateEvent: (input: unknown, receivedAtMs: number) => EventCheck;
  /** Dead letters are read with it (a throwaway consumer group) and replayed through the producer. */
  kafka?: KafkaClient;
  producer: Producer;
  now: () => number;
  /** Owners' changes are recorded in the audit log; their own page reads it back. */
  audit: { auditor: Auditor; reader: AuditReader };
}

/**
 * The account owner's dashboard, served by the console under /dashboard: the web app's pages
 * and assets, and its JSON API under /dashboard/api (session cookie + CSRF token; see
 * session.guard.ts). Hidden from the public OpenAPI document.
 */
export function dashboardPlugin(deps: DashboardDeps): FastifyPluginAsync {
  return async (app) => {
    const { config } = deps;
    const limits = routeLimits(config.DASHBOARD_RATE_LIMIT_PER_MINUTE, config.DASHBOARD_SIGNIN_LIMIT_PER_MINUTE);
    await app.register(cookie);

    await app.register(
      async (api) => {
        const sessions = createSessionStore({
          redis: deps.redis,
          keyPrefix: config.REDIS_KEY_PREFIX,
          idleSeconds: config.DASHBOARD_SESSION_IDLE_SECONDS,
          maxSeconds: config.DASHBOARD_SESSION_MAX_SECONDS,
          now: deps.now,
        });
        const allowedOrigins = config.DASHBOARD_ORIGINS.split(',')
          .map((o) => o.trim())
          .filter(Boolean);
        const guard = createSessionGuard({ sessions, controlPlane: deps.controlPlane, allowedOrigins });
        const throttle = createSignInThrottle({
          redis: deps.redis,
          keyPrefix: config.REDIS_KEY_PREFIX,
          perEmail: config.DASHBOARD_SIGNIN_LIMIT_PER_EMAIL,
          perAccount: config.DASHBOARD_SIGNIN_LIMIT_PER_ACCOUNT,
          windowMs: config.DASHBOARD_SIGNIN_WINDOW_SECONDS * 1000,
        });
        const secretKeys = consoleSecretKeysFromConfig(config);
        const secondFactor = createSecondFactor({
          redis: deps.redis,
          keyPrefix: config.REDIS_KEY_PREFIX,
          keys: secretKeys.keys,
          controlPlane: deps.controlPlane,
          now: deps.now,
        });
        api.addHook('preParsing', async (request, reply, payload) => {
          await guard(request, reply);
          return payload;
        });
        // Answers carry the CSRF token, new API keys and account data: never cached (issue 26).
        registerNoStore(api);
        await api.register(
          sessionRoutes({
            controlPlane: deps.controlPlane,
            sessions,
            cookieSecure: config.DASHBOARD_COOKIE_SECURE,
            maxSeconds: config.DASHBOARD_SESSION_MAX_SECONDS,
            limits,
            throttle,
            hashGate: createPasswordHashGate(config.DASHBOARD_PASSWORD_HASH_CONCURRENCY),
            devices: createKnownDevices(secretKeys.keys.map((k) => k.macKey)),
            secondFactor,
          }),
        );
        await api.register(
          totpRoutes({
            controlPlane: deps.controlPlane,
            secondFactor,
            throttle,
            keysConfigured: secretKeys.configured,
            issuer: 'Ingest',
            limits,
            auditor: deps.audit.auditor,
            now: deps.now,
          }),
        );
        await api.register(keysRoutes({ controlPlane: deps.controlPlane, keyLastUsed: deps.keyLastUsed, limits, auditor: deps.audit.auditor }));
        await api.register(dashboardAllowanceRoutes({ allowance: deps.allowance, ch: deps.ch, limits, now: deps.now }));
        const uploadSlots = uploadSlotHooks(deps.uploadSlots, deps.metrics, (request) => dashboardOf(request).account.id);
        await api.register(
          dashboardJobsRoutes({
            statusStore: deps.jobStatus,
            jobs: deps.jobs,
            allowance: deps.allowance,
            idempotency: deps.idempotency,
            metrics: deps.ingestMetrics,
            uploadSlots,
            slicer: deps.slicer,
            limits,
          }),
        );
        await api.register(
          dashboardEventsRoutes({
            store: createClickHouseEventStore(deps.ch),
            syncStates: createSyncStateStore({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX }),
            limits,
            now: deps.now,
          }),
        );
        await api.register(
          deadLettersRoutes({
            kafka: deps.kafka,
            producer: deps.producer,
            topicPrefix: config.KAFKA_TOPIC_PREFIX,
            limits,
            metrics: deps.metrics,
            auditor: deps.audit.auditor,
          }),
        );
        // One channel and one property cache for the mapping check and the Connections page.
        const channel = connectionChannelFromConfig(config);
        await api.register(
          mappingRoutes({
            controlPlane: deps.controlPlane,
            recordStates: createRecordStateReader({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX }),
            validateEvent: deps.validateEvent,
            mappingCheck: createMappingCrmCheck({ channel, controlPlane: deps.controlPlane }),
            limits,
            now: deps.now,
            auditor: deps.audit.auditor,
          }),
        );
        await api.register(dashboardAuditRoutes({ reader: deps.audit.reader, limits }));
        await api.register(
          dashboardSyncHealthRoutes({ store: createSyncHealthStore({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX }), limits, now: deps.now }),
        );
        const outboundPolicy = createOutboundPolicy({ allowHttp: config.CRM_ALLOW_HTTP, allowedCidrs: config.CRM_ALLOWED_CIDRS });
        // The OAuth code exchange: the same client as crm-sink's token calls, so the policy is
        // checked on every address dialled (DNS rebinding), not only on the settings' URLs.
        const tokenHttp = createTokenHttp({ policy: outboundPolicy, timeoutMs: config.CRM_OAUTH_HTTP_TIMEOUT_MS });
        api.addHook('onClose', () => tokenHttp.close());
        await api.register(
          connectionsRoutes({
            controlPlane: deps.controlPlane,
            outbound: outboundPolicy,
            channel,
            limits,
            auditor: deps.audit.auditor,
          }),
        );
        await api.register(
          crmOAuthRoutes({
            controlPlane: deps.controlPlane,
            redis: deps.redis,
            keyPrefix: config.REDIS_KEY_PREFIX,
            apps: oauthAppsFromConfig(config),
            send: tokenHttp.send,
            outboundPolicy,
            auditor: deps.audit.auditor,
            limits,
            cookieSecure: config.DASHBOARD_COOKIE_SECURE,
            sessions,
            now: deps.now,
          }),
        );
        api.all('/*', { ...limits.api, schema: { hide: true }, config: { ...limits.api.config, dashboardPublic: true } }, async (request) => {
          throw new ProblemError('notFound', `No dashboard API route for ${request.method} ${request.url.split('?')[0]}.`);
        });
      },
      { prefix: '/api' },
    );

    await app.register(webRoutes({ webDir: config.DASHBOARD_WEB_DIR || defaultWebDir(), limits }));
  };
}

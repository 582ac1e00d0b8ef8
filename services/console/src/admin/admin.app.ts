import { type ClickHouse, createClickHouse, type KafkaClient, type Producer, topicName } from '@ingest/platform';
import {
  type ControlPlane,
  createAllowance,
  createAuditReader,
  createAuditWriter,
  createCrmStateEraser,
  createEventsEraser,
  createEventValidator,
  createLedgerReader,
  createLedgerWriter,
  createOutboundPolicy,
  createRecordStateReader,
  type OutboundPolicy,
  readSuppressions,
  seenIdsKey,
  createIdentityMapBuilder,
  createIdentityMapEraser,
  createIdentityMapIndex,
} from '@ingest/domain';
import type { FastifyInstance } from 'fastify';
import { type BaseAppDeps, createAuditor, createBaseApp, registerNoStore, registerOpenApi } from '@ingest/http';
import type { ConsoleConfig } from '../config.js';
import { createAdminAuth, requireAdmin } from './admin-auth.js';
import { adminRoutes } from './admin.routes.js';
import { createErasureService, createStorageProgress } from './erasure.service.js';
import { connectionChannelFromConfig } from '../crm/connection-channel.client.js';
import { createMappingCrmCheck } from '../crm/mapping-crm.check.js';

export interface AdminAppDeps extends Omit<BaseAppDeps, 'config'> {
  config: ConsoleConfig;
  controlPlane: ControlPlane;
  /** Writes plan changes to the billing ledger topic. */
  producer: Producer;
  /** Reads the billing ledger (its ClickHouse copy); erasures delete from `events` with it unless erasureCh is given. */
  ch: ClickHouse;
  /** The client erasures delete with (CLICKHOUSE_ERASURE_USER), when the console's own user reads only. */
  erasureCh?: ClickHouse;
  /** Erasures read the storage writer's progress; without it the erasure route does not exist. */
  kafka?: KafkaClient;
  /** Where CRM credentials may point; default from CRM_ALLOW_HTTP and CRM_ALLOWED_CIDRS. */
  outboundPolicy?: OutboundPolicy;
  /** The per-account readers' ClickHouse access client; default: CLICKHOUSE_ACCESS_USER's (none when it is empty). */
  openClickHouseAccess?: () => ClickHouse;
  now?: () => number;
}

/** Where the admin API's own OpenAPI document is served (on the admin listener only). */
export const ADMIN_OPENAPI_PATH = '/admin/v1/openapi.json';

/**
 * The admin API (/admin/v1: accounts, keys, owners, CRM mappings and credentials) as an app of
 * its own, for its own listener (ADMIN_HOST/ADMIN_PORT, loopback by default). The public
 * listener has no admin route and its OpenAPI document lists none, so the 12 admin paths are
 * neither reachable nor advertised from the internet. Its document is at
 * /admin/v1/openapi.json, for admins only (the same token as the API; issue 26: the document is
 * a map of what a stolen token could do), and has no browsable UI (a browser could not send the
 * token). With ADMIN_TOKEN empty it has no route. Every answer is `Cache-Control: no-store`:
 * new API keys and admin credentials are in them.
 * It also serves the billing ledger (/admin/v1/billing/ledger) and records plan changes in it,
 * and writes every state change to the audit log (/admin/v1/audit reads it).
 */
export async function buildAdminApp(deps: AdminAppDeps): Promise<FastifyInstance> {
  const { config } = deps;
  const app = await createBaseApp(deps, { rateLimitNamespace: 'ratelimit-admin:' });
  registerNoStore(app);
  const authenticate = createAdminAuth({ tokens: { current: config.ADMIN_TOKEN, previous: config.ADMIN_TOKEN_PREVIOUS }, directory: deps.controlPlane });
  await registerOpenApi(app, {
    title: 'Event ingestion admin API',
    description: 'Accounts, plans, API keys, dashboard owners, CRM mappings and credentials. Operators only.',
    securityDescription: 'an admin token: the gateway ADMIN_TOKEN, or a named admin credential (adm_...)',
    jsonPath: ADMIN_OPENAPI_PATH,
    // An onRequest hook of the route: after the rate limiter, so token guesses are limited too.
    guard: (request) => requireAdmin(request, authenticate),
  });
  // The sink's key prefix is the same REDIS_KEY_PREFIX, so the dry-run reads the state the sink applies events to.
  const recordStates = createRecordStateReader({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX });
  // Plan changes and the ledger read counters only; the key is the console's all the same.
  const allowance = createAllowance({
    redis: deps.redis,
    keyPrefix: config.REDIS_KEY_PREFIX,
    seenIdsKey: seenIdsKey(config).key,
    ...(deps.now ? { now: deps.now } : {}),
  });
  const ledger = {
    writer: createLedgerWriter(deps.producer, topicName(config.KAFKA_TOPIC_PREFIX, 'billingLedger')),
    reader: createLedgerReader(deps.ch),
    periodCounts: allowance.periodCounts,
  };
  const now = deps.now ?? Date.now;
  const audit = {
    auditor: createAuditor({ writer: createAuditWriter(deps.producer, topicName(config.KAFKA_TOPIC_PREFIX, 'auditLog')), now }),
    reader: createAuditReader(deps.ch),
  };
  const { kafka } = deps;
  const suppressionTopic = topicName(config.KAFKA_TOPIC_PREFIX, 'erasures');
  const identityMapEraser = (client: KafkaClient) => {
    const index = createIdentityMapIndex({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX });
    const topic = topicName(config.KAFKA_TOPIC_PREFIX, 'identities');
    const builder = createIdentityMapBuilder({ kafka: client, topic, index, logger: deps.logger });
    return createIdentityMapEraser({ index, builder, producer: deps.producer, topic });
  };
  const erasure =
    kafka &&
    createErasureService({
      producer: deps.producer,
      suppressionTopic,
      storage: createStorageProgress({ kafka, topic: topicName(config.KAFKA_TOPIC_PREFIX, 'eventsUnique'), groupId: config.PROCESSOR_STORAGE_GROUP }),
      events: createEventsEraser(deps.erasureCh ?? deps.ch),
      crmState: createCrmStateEraser({ redis: deps.redis, keyPrefix: config.REDIS_KEY_PREFIX }),
      identityMap: identityMapEraser(kafka),
      readSuppressions: () => readSuppressions(kafka, suppressionTopic, deps.logger),
      waitMs: config.ERASURE_WAIT_MS,
      ...(deps.now ? { now: deps.now } : {}),
    });
  await app.register(
    adminRoutes({
      controlPlane: deps.controlPlane,
      adminToken: config.ADMIN_TOKEN,
      adminTokenPrevious: config.ADMIN_TOKEN_PREVIOUS,
      audit,
      validateEvent: createEventValidator({ maxFutureMs: config.MAX_FUTURE_SKEW_MS }),
      recordStates,
      ledger,
      outboundPolicy: deps.outboundPolicy ?? createOutboundPolicy({ allowHttp: config.CRM_ALLOW_HTTP, allowedCidrs: config.CRM_ALLOWED_CIDRS }),
      mappingCheck: createMappingCrmCheck({ channel: connectionChannelFromConfig(config), controlPlane: deps.controlPlane }),
      clickhouseReaders: {
        database: config.CLICKHOUSE_DATABASE,
        ...(deps.openClickHouseAccess
          ? { openAccessClient: deps.openClickHouseAccess }
          : config.CLICKHOUSE_ACCESS_USER === ''
            ? {}
            : {
                openAccessClient: () =>
                  createClickHouse({ url: config.CLICKHOUSE_URL, username: config.CLICKHOUSE_ACCESS_USER, password: config.CLICKHOUSE_ACCESS_PASSWORD }),
              }),
      },
      ...(erasure ? { erasure } : {}),
      ...(deps.now ? { now: deps.now } : {}),
    }),
    { prefix: '/admin/v1' },
  );
  return app;
}

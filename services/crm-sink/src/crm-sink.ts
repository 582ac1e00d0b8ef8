import {
  AppError,
  type Component,
  createDeadLetterSink,
  type KafkaClient,
  type Logger,
  type Producer,
  type Redis,
  type Registry,
  topicName,
} from '@ingest/platform';
import {
  type ControlPlaneReader,
  type CredentialKeyring,
  type CredentialOpener,
  type CrmCredential,
  createIdentityMapIndex,
  createSyncHealthStore,
  createSyncStateStore,
  credentialAuth,
  type FormSender,
  isSuspended,
  type MappingReader,
  type OAuthApps,
  type StoredCrmCredential,
  type SuppressionList,
} from '@ingest/domain';
import type { CreateAdapter } from './adapters/adapter.js';
import type { BearerSource } from './adapters/http.client.js';
import { createOAuthMetrics, type OAuthMetrics } from './oauth/oauth.metrics.js';
import { createOAuthRevoker } from './oauth/revoker.js';
import { createTokenManager, type TokenManager } from './oauth/token.manager.js';
import { createTokenStateStore } from './oauth/token.store.js';
import { createCrmCallMetrics, instrumentAdapter } from './adapters/instrumented.adapter.js';
import type { ParkingSettings } from './park/park.writer.js';
import { createParkResumer } from './park/park.resumer.js';
import { createParkStore, type ParkLimits } from './park/park.store.js';
import type { RateLimit } from './rate/account-limiter.js';
import type { RetryPolicy } from './retry/crm-call.retry.js';
import { createSharedTokenBuckets } from './rate/shared-token-bucket.js';
import { createPendingLinksStore } from './sync/pending-links.store.js';
import { createRecordStateStore } from './sync/record-state.store.js';
import { createSinkConsumer } from './sync/sink.consumer.js';
import { countingSyncStates, createSyncHealthRecorder } from './sync/sync-health.recorder.js';
import { createSyncHealthMonitor, DEFAULT_SYNC_HEALTH_MONITOR, type SyncHealthMonitorSettings } from './sync/sync-health.monitor.js';
import { createSyncEngine } from './sync/sync.engine.js';
import { createIdentityJoin, type IdentityJoinSettings } from './identity/identity-join.js';
import { createIdentityWaitStore } from './identity/identity-wait.store.js';
import { createSyncMetrics } from './sync/sync.metrics.js';

export interface CrmSinkDeps {
  kafka: KafkaClient;
  producer: Producer;
  redis: Redis;
  mappings: MappingReader;
  /** Decrypts stored credentials with crm-sink's private keys (createCredentialOpener). */
  openCredential: CredentialOpener;
  /** `bearer`: the token source of an OAuth or JWT bearer credential (the adapter's HTTP client uses it). */
  createAdapter: CreateAdapter;
  /** OAuth and JWT bearer credentials (docs/crm-sync.md); without it such credentials are refused (crm_oauth_unconfigured). */
  oauth?: OAuthSinkConfig;
  logger: Logger;
  metrics: Registry;
  topicPrefix: string;
  groupId: string;
  redisKeyPrefix?: string;
  /** How long Redis keeps what the sink remembers (docs/crm-sync.md). */
  ttl: {
    /** An event's applied marks (a redelivered event is not applied twice). */
    ledgerSeconds: number;
    /** A CRM record's last applied values and their event times (per-field event-time order). */
    recordStateSeconds: number;
    /** An event's sync state, readable through GET /v1/events/{eventId}. */
    syncStateSeconds: number;
  };
  coalesce: { windowMs: number; maxRecords: number };
  rate: RateLimit;
  retry: RetryPolicy;
  maxUnfinishedPerPartition: number;
  partitionsConsumedConcurrently?: number;
  /** Isolation of blocked accounts (docs/crm-sync.md): the hold, then parking in Redis. */
  park: ParkConfig;
  /** The control plane's accounts: a suspended account's sync is held (parked) until it is resumed. Absent: none is. */
  accounts?: Pick<ControlPlaneReader, 'accountById' | 'listAccounts'>;
  /** The erasure suppression list (started before the sink): erased people's events are not synced. Absent: none are. */
  erasures?: SuppressionList;
  /** Late identify (docs/segment.md): events without email/domain wait this long for their identify. Absent: the defaults (300 s). */
  identityWait?: IdentityJoinSettings;
  /** The accounts' sync health metrics (docs/crm-sync.md, "Sync health"); defaults when absent. */
  health?: SyncHealthMonitorSettings;
}

const DEFAULT_IDENTITY_WAIT: IdentityJoinSettings = { waitMs: 300_000, maxPerAccount: 10_000, pollMs: 1_000 };

export type ParkConfig = Omit<ParkingSettings, 'store'> & { limits: ParkLimits };

export interface OAuthSinkConfig {
  apps: OAuthApps;
  /** crm-sink's keyring: it opens the record's tokens and seals the ones it refreshes for itself. */
  keyring: CredentialKeyring;
  /** The token and revocation endpoints' HTTP (token-http.ts). */
  send: FormSender;
  /** Refresh lease per credential (longer than a token call) and the wait for another replica's refresh. */
  leaseMs: number;
  waitMs: number;
  revokePollMs: number;
}

/** The sink, and the token source of its OAuth credentials for the connection channel's checks. */
export interface CrmSink extends Component {
  /** The current access token of an OAuth/JWT bearer credential (undefined: a bare token); throws when this sink has no OAuth set up. */
  bearerFor(credential: CrmCredential, stored: StoredCrmCredential): BearerSource | undefined;
}

/** Assembles the sink; main.ts and the integration tests both call this. */
export function createCrmSink(deps: CrmSinkDeps): CrmSink {
  const deadLetters = createDeadLetterSink(deps.producer, topicName(deps.topicPrefix, 'crmDeadLetters'), 'crm-sink', {
    metrics: deps.metrics,
    label: 'crm-sink',
    logger: deps.logger,
  });
  const callMetrics = createCrmCallMetrics(deps.metrics);
  const { accounts } = deps;
  const syncMetrics = createSyncMetrics(deps.metrics, accounts ? () => accounts.listAccounts().filter(isSuspended).length : undefined);
  const { limits, ...parkSettings } = deps.park;
  const parking: ParkingSettings = { ...parkSettings, store: createParkStore({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix, limits }) };
  const healthStore = createSyncHealthStore({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix });
  const health = createSyncHealthRecorder({ store: healthStore, logger: deps.logger });
  const { oauth } = deps;
  // The gauge reads the manager built just below (collect runs at scrape time).
  const oauthMetrics: OAuthMetrics | undefined = oauth ? createOAuthMetrics(deps.metrics, () => tokens?.brokenCount() ?? 0) : undefined;
  const tokens: TokenManager | undefined =
    oauth && oauthMetrics
      ? createTokenManager({
          store: createTokenStateStore({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix }),
          redis: deps.redis,
          keyPrefix: deps.redisKeyPrefix,
          keyring: oauth.keyring,
          apps: oauth.apps,
          send: oauth.send,
          metrics: oauthMetrics,
          logger: deps.logger,
          leaseMs: oauth.leaseMs,
          waitMs: oauth.waitMs,
        })
      : undefined;
  const bearerFor = (credential: CrmCredential, stored: StoredCrmCredential) => {
    if (tokens) return tokens.bearerFor(stored, credential);
    if (credentialAuth(stored.credential as Record<string, unknown>).kind !== 'token')
      throw new AppError('crm_oauth_unconfigured', `credential ${stored.name} uses OAuth, which this crm-sink is not set up for`);
    return undefined;
  };
  const engine = createSyncEngine({
    mappings: deps.mappings,
    openCredential: deps.openCredential,
    createAdapter: (credential, stored) => instrumentAdapter(deps.createAdapter(credential, bearerFor(credential, stored)), callMetrics),
    store: createRecordStateStore({
      redis: deps.redis,
      keyPrefix: deps.redisKeyPrefix,
      ledgerTtlSeconds: deps.ttl.ledgerSeconds,
      stateTtlSeconds: deps.ttl.recordStateSeconds,
    }),
    pendingLinks: createPendingLinksStore({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix, ttlSeconds: deps.ttl.ledgerSeconds }),
    syncStates: countingSyncStates(createSyncStateStore({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix, ttlSeconds: deps.ttl.syncStateSeconds }), health),
    health,
    deadLetters,
    logger: deps.logger,
    metrics: syncMetrics,
    parking,
    coalesceWindowMs: deps.coalesce.windowMs,
    coalesceMaxRecords: deps.coalesce.maxRecords,
    rate: deps.rate,
    retry: deps.retry,
    tokenBucketOf: createSharedTokenBuckets({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix, rate: deps.rate }),
    ...(deps.erasures ? { erased: deps.erasures.suppressed } : {}),
    ...(accounts
      ? {
          accountSuspended: (accountId: string) => {
            const account = accounts.accountById(accountId);
            return account !== undefined && isSuspended(account);
          },
        }
      : {}),
  });
  const identity = createIdentityJoin({
    engine,
    index: createIdentityMapIndex({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix }),
    waits: createIdentityWaitStore({ redis: deps.redis, keyPrefix: deps.redisKeyPrefix }),
    settings: deps.identityWait ?? DEFAULT_IDENTITY_WAIT,
    ...(deps.erasures ? { erased: deps.erasures.suppressed } : {}),
    metrics: deps.metrics,
    logger: deps.logger,
  });
  const consumer = createSinkConsumer({
    kafka: deps.kafka,
    topics: [topicName(deps.topicPrefix, 'eventsUnique'), topicName(deps.topicPrefix, 'crmReplay')],
    groupId: deps.groupId,
    engine: identity.engine,
    deadLetters,
    ...(deps.erasures ? { erasures: deps.erasures } : {}),
    logger: deps.logger,
    metrics: deps.metrics,
    maxUnfinishedPerPartition: deps.maxUnfinishedPerPartition,
    partitionsConsumedConcurrently: deps.partitionsConsumedConcurrently,
  });
  const monitor = createSyncHealthMonitor({
    store: healthStore,
    settings: deps.health ?? DEFAULT_SYNC_HEALTH_MONITOR,
    metrics: deps.metrics,
    logger: deps.logger,
  });
  const resumer = createParkResumer({ resumeParked: engine.resumeParked, settings: parking, metrics: syncMetrics, logger: deps.logger });
  const revoker =
    oauth &&
    oauthMetrics &&
    createOAuthRevoker({
      redis: deps.redis,
      keyPrefix: deps.redisKeyPrefix,
      keyring: oauth.keyring,
      apps: oauth.apps,
      send: oauth.send,
      metrics: oauthMetrics,
      logger: deps.logger,
      pollMs: oauth.revokePollMs,
    });
  return {
    name: consumer.name,
    async start() {
      await consumer.start();
      await resumer.start();
      await identity.poller.start();
      await monitor.start();
      await revoker?.start();
    },
    async stop() {
      await revoker?.stop();
      // The resumer first: it calls into the engine, which the consumer's stop ends.
      await monitor.stop();
      await resumer.stop();
      await identity.poller.stop();
      await consumer.stop();
    },
    healthy: () => consumer.healthy(),
    bearerFor,
  };
}

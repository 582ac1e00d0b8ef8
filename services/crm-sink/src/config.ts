import { CommonConfig, ControlPlaneConfig, KafkaConfig, loadConfig, RedisConfig } from '@ingest/platform';
import { CrmCredentialsPrivateKeysConfig, CrmOAuthConfig, CrmOutboundConfig } from '@ingest/domain';
import { type Static, Type } from '@sinclair/typebox';

const DAY_S = 24 * 3600;

export const CrmSinkConfigSchema = Type.Object({
  ...CommonConfig,
  ...KafkaConfig,
  ...ControlPlaneConfig,
  ...RedisConfig,
  ...CrmOutboundConfig,
  ...CrmCredentialsPrivateKeysConfig,
  /** The OAuth apps (the console's settings of the same names): crm-sink refreshes and revokes with them. */
  ...CrmOAuthConfig,
  /** How often the queue of disconnected OAuth grants to revoke is looked at. */
  CRM_OAUTH_REVOKE_POLL_MS: Type.Integer({ minimum: 100, default: 5_000 }),
  CRM_SINK_OPS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3102 }),
  CRM_SINK_OPS_HOST: Type.String({ default: '127.0.0.1' }),
  /**
   * The connection channel (docs/crm-sync.md, "Connection checks"): the console asks crm-sink to
   * test a credential or read a CRM's object properties. Off while CRM_SINK_INTERNAL_TOKEN is empty.
   */
  CRM_SINK_INTERNAL_HOST: Type.String({ default: '127.0.0.1' }),
  CRM_SINK_INTERNAL_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3104 }),
  /** At least 32 characters (e.g. `openssl rand -hex 32`); the console holds the same value. */
  CRM_SINK_INTERNAL_TOKEN: Type.String({ default: '', pattern: '^$|^\\S{32,}$' }),
  /** During a rotation of the token: the previous one, still accepted. */
  CRM_SINK_INTERNAL_TOKEN_PREVIOUS: Type.String({ default: '', pattern: '^$|^\\S{32,}$' }),
  /** Connection checks (tests and property reads) per account per minute, shared by all replicas. */
  CRM_CONNECTION_CHECKS_PER_MINUTE: Type.Integer({ minimum: 1, default: 10 }),
  /** One check's CRM call: the whole call (connect to last byte), and the largest answer read. */
  CRM_CONNECTION_CHECK_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 10_000 }),
  CRM_CONNECTION_CHECK_MAX_RESPONSE_BYTES: Type.Integer({ minimum: 1024, default: 4 * 1024 * 1024 }),
  CRM_SINK_GROUP: Type.String({ minLength: 1, default: 'crm-sink' }),
  /** Partitions of events.unique and crm.replay handled at once per instance. */
  CRM_SINK_PARTITIONS_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
  /** Unfinished events a partition may hold (e.g. behind a paused account) before it stops fetching. */
  CRM_SINK_MAX_UNFINISHED_PER_PARTITION: Type.Integer({ minimum: 1, default: 5_000 }),
  /** Operations for one CRM record are gathered this long, then written as one upsert. */
  CRM_COALESCE_WINDOW_MS: Type.Integer({ minimum: 0, default: 500 }),
  /** An account's buffer is written early once it holds this many records. */
  CRM_COALESCE_MAX_RECORDS: Type.Integer({ minimum: 1, default: 500 }),
  /** CRM calls per second per account, and the burst; default fits HubSpot's 100 requests per 10 s. */
  CRM_RATE_PER_SECOND: Type.Number({ exclusiveMinimum: 0, default: 9 }),
  CRM_RATE_BURST: Type.Integer({ minimum: 1, default: 10 }),
  /** Transient failures (5xx, timeouts): attempts per call, and the time after which no retry starts. */
  CRM_RETRY_MAX_ATTEMPTS: Type.Integer({ minimum: 1, default: 8 }),
  CRM_RETRY_BUDGET_MS: Type.Integer({ minimum: 0, default: 300_000 }),
  CRM_RETRY_BASE_DELAY_MS: Type.Integer({ minimum: 1, default: 500 }),
  CRM_RETRY_MAX_DELAY_MS: Type.Integer({ minimum: 1, default: 30_000 }),
  /**
   * Isolation (docs/crm-sync.md): a call may wait (Retry-After, backoff) or hang this long; beyond
   * it the account is blocked and its events are parked in Redis, so its partitions move on.
   */
  CRM_ACCOUNT_HOLD_MS: Type.Integer({ minimum: 100, default: 10_000 }),
  /** Retry-After values above this are taken as this. */
  CRM_MAX_RETRY_AFTER_MS: Type.Integer({ minimum: 1_000, default: 60_000 }),
  /** Parked events per account, and their bytes; beyond them an account's new events are dead-lettered (crm_park_full). */
  CRM_PARK_MAX_EVENTS_PER_ACCOUNT: Type.Integer({ minimum: 1, default: 100_000 }),
  CRM_PARK_MAX_BYTES_PER_ACCOUNT: Type.Integer({ minimum: 1024, default: 64 * 1024 * 1024 }),
  /** Parked events of all accounts together, and their bytes (Redis memory). */
  CRM_PARK_MAX_EVENTS_TOTAL: Type.Integer({ minimum: 1, default: 1_000_000 }),
  CRM_PARK_MAX_BYTES_TOTAL: Type.Integer({ minimum: 1024, default: 512 * 1024 * 1024 }),
  /** A parked event not synced this long after it was parked is dead-lettered (crm_retries_exhausted). */
  CRM_PARK_MAX_AGE_MS: Type.Integer({ minimum: 1_000, default: 24 * 3600 * 1000 }),
  /** Longest delay between two tries of a blocked account (full jitter from CRM_RETRY_BASE_DELAY_MS). */
  CRM_PARK_MAX_DELAY_MS: Type.Integer({ minimum: 1, default: 60_000 }),
  /** How often each replica looks for parked accounts that are due, and how many events one resume step takes. */
  CRM_PARK_POLL_MS: Type.Integer({ minimum: 10, default: 1_000 }),
  CRM_PARK_RESUME_BATCH: Type.Integer({ minimum: 1, default: 500 }),
  /** A replica's lease on resuming one account, renewed after each step. */
  CRM_PARK_LEASE_MS: Type.Integer({ minimum: 1_000, default: 120_000 }),
  /** Late identify (docs/segment.md): how long an event without email/domain waits for its person's identify; 0: not at all (skipped at once). */
  IDENTITY_WAIT_SECONDS: Type.Integer({ minimum: 0, maximum: 7 * DAY_S, default: 300 }),
  /** Events of one account waiting for their identify at once; beyond, an event is skipped `identity_unresolved` at once. */
  IDENTITY_WAIT_MAX_PER_ACCOUNT: Type.Integer({ minimum: 1, default: 10_000 }),
  /** How often each replica looks at the waiting events (and the page it takes). */
  IDENTITY_WAIT_POLL_MS: Type.Integer({ minimum: 10, default: 1_000 }),
  /** How long applied (account, eventId, rule) are remembered; longer than Kafka retention plus any replay. */
  CRM_LEDGER_TTL_SECONDS: Type.Integer({ minimum: 3600, default: 35 * DAY_S }),
  /** How long an event's sync state stays readable through GET /v1/events/{eventId}. */
  CRM_SYNC_STATE_TTL_SECONDS: Type.Integer({ minimum: 60, default: 30 * DAY_S }),
  /**
   * How long a CRM record's last applied values and their event times are kept: an older event
   * arriving later than this may overwrite a newer value. It used to be the ledger's TTL by
   * accident; it is its own setting now, with the same default.
   */
  CRM_RECORD_STATE_TTL_SECONDS: Type.Integer({ minimum: 3600, default: 35 * DAY_S }),
  /**
   * Sync health (docs/crm-sync.md): an account parked, failing or with a broken credential this
   * long is stuck (ingest_crm_sync_stuck_accounts, the alert IngestCrmSyncAccountStuck).
   */
  CRM_HEALTH_ALERT_AFTER_MS: Type.Integer({ minimum: 60_000, default: 30 * 60_000 }),
  /** Accounts listed by name in ingest_crm_sync_unhealthy_seconds (longest unhealthy first): the bound of its cardinality. */
  CRM_HEALTH_METRICS_MAX_ACCOUNTS: Type.Integer({ minimum: 0, maximum: 200, default: 20 }),
  /** How often each replica reads the accounts' health into its metrics. */
  CRM_HEALTH_POLL_MS: Type.Integer({ minimum: 1_000, default: 15_000 }),
  /** HTTP timeouts of the CRM clients: connect, then each wait for headers or the next body bytes... */
  CRM_HTTP_CONNECT_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 5_000 }),
  CRM_HTTP_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 30_000 }),
  /** ...and the whole call, so a CRM dripping bytes under the idle timeout still ends. */
  CRM_HTTP_REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1, default: 60_000 }),
  /** A CRM answer larger than this is not read: the call fails as transient and the connection is dropped. */
  CRM_HTTP_MAX_RESPONSE_BYTES: Type.Integer({ minimum: 1024, default: 8 * 1024 * 1024 }),
});

export type CrmSinkConfig = Static<typeof CrmSinkConfigSchema>;

export function loadCrmSinkConfig(env?: Record<string, string | undefined>): CrmSinkConfig {
  return loadConfig(CrmSinkConfigSchema, env);
}

import { AppError, ClickHouseConfig, CommonConfig, ControlPlaneConfig, KafkaConfig, loadConfig, RedisConfig } from '@ingest/platform';
import { CrmCredentialsPublicKeyConfig, CrmOAuthConfig, CrmOutboundConfig, MIN_ADMIN_TOKEN_BYTES, SeenIdsConfig, seenIdsKey } from '@ingest/domain';
import { checkHttpListenerConfig, HttpListenerConfig, UploadSlotsConfig } from '@ingest/http';
import { type Static, Type } from '@sinclair/typebox';

/**
 * The console: the owners' dashboard (its pages and /dashboard/api) on CONSOLE_HOST/PORT and
 * the admin API (/admin/v1) on a listener of its own (ADMIN_HOST/PORT). It writes the control
 * plane (keys, owners, mappings, credentials), so it runs as the Kafka principal that may.
 * The listener, timeout, rate-limit and dashboard settings keep the names they had on the
 * gateway's console role (docs/configuration.md).
 */
export const ConsoleConfigSchema = Type.Object({
  ...CommonConfig,
  ...KafkaConfig,
  ...ControlPlaneConfig,
  ...ClickHouseConfig,
  ...RedisConfig,
  /** Where CRM credentials may point (checked when the admin API or the dashboard stores one). */
  ...CrmOutboundConfig,
  /** crm-sink's public key: the console seals CRM credentials and can open none. */
  ...CrmCredentialsPublicKeyConfig,
  /** The OAuth apps owners connect HubSpot and Salesforce with (docs/configuration.md, "CRM OAuth"). */
  ...CrmOAuthConfig,
  ...HttpListenerConfig,
  /** The dashboard's CSV uploads: slots per account and per client address on one console replica. */
  ...UploadSlotsConfig,
  /** The seen-id memory's key (issue 26): test events and CSV uploads count like the gateway's. */
  ...SeenIdsConfig,
  /** The dashboard (pages, assets, /dashboard/api). */
  CONSOLE_HOST: Type.String({ default: '127.0.0.1' }),
  CONSOLE_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3003 }),
  CONSOLE_OPS_HOST: Type.String({ default: '127.0.0.1' }),
  CONSOLE_OPS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3103 }),
  /** Bytes of writes waiting for their turn; beyond it a request is answered 503 at once. */
  KAFKA_MAX_QUEUED_BYTES: Type.Integer({ minimum: 1_048_576, default: 64 * 1_048_576 }),
  /**
   * Bearer token of the admin API (/admin/v1): the admin named `admin`, role admin. At least 32
   * bytes (`openssl rand -hex 32`). Empty disables the admin API and its listener.
   */
  ADMIN_TOKEN: Type.String({ default: '' }),
  /** While ADMIN_TOKEN is rotated: the old token, still accepted (as `admin`) until this is emptied. At least 32 bytes. */
  ADMIN_TOKEN_PREVIOUS: Type.String({ default: '' }),
  /**
   * The admin API (and its OpenAPI document) listens here only, never on the dashboard's port.
   * Loopback by default: reach it on the host, through `kubectl port-forward`, or bind it to
   * an internal address on purpose.
   */
  ADMIN_HOST: Type.String({ default: '127.0.0.1' }),
  ADMIN_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3200 }),
  /**
   * A ClickHouse user that may create users, row policies, settings profiles and quotas (and
   * GRANT SELECT on the service's tables): the admin API's per-account readers use it
   * (docs/clickhouse-readers.md). Empty: those routes answer 409. Never the console's reader.
   */
  CLICKHOUSE_ACCESS_USER: Type.String({ default: '' }),
  CLICKHOUSE_ACCESS_PASSWORD: Type.String({ default: '' }),
  /**
   * Erasure (docs/erasure.md): the processor's storage consumer group (the same value as the
   * processor's), whose committed offsets an erasure waits on before it deletes, and the bound
   * on that wait and on the wait for ClickHouse's mutation.
   */
  PROCESSOR_STORAGE_GROUP: Type.String({ minLength: 1, default: 'processor-storage' }),
  /**
   * The ClickHouse user erasures delete `events` rows with (ALTER DELETE / DELETE on `events`):
   * the console's own user is the read-only one where the dashboard only reads (the local stack,
   * docs/security.md), which may not delete. Empty: the console's own user.
   */
  CLICKHOUSE_ERASURE_USER: Type.String({ default: '' }),
  CLICKHOUSE_ERASURE_PASSWORD: Type.String({ default: '' }),
  ERASURE_WAIT_MS: Type.Integer({ minimum: 0, maximum: 600_000, default: 60_000 }),
  /** The public API's rule, applied to the events of a mapping dry-run and the dashboard's CSV uploads. */
  MAX_FUTURE_SKEW_MS: Type.Integer({ minimum: 0, default: 24 * 60 * 60 * 1000 }),
  /**
   * The dashboard's session cookie is `Secure` unless this is false. Browsers accept Secure
   * cookies from http://localhost and http://127.0.0.1 (potentially trustworthy origins), so
   * only plain-http access by another host name needs it off.
   */
  DASHBOARD_COOKIE_SECURE: Type.Boolean({ default: true }),
  /** A dashboard session ends after this long without a request... */
  DASHBOARD_SESSION_IDLE_SECONDS: Type.Integer({ minimum: 1, default: 30 * 60 }),
  /** ...and this long after sign-in, whatever happens. */
  DASHBOARD_SESSION_MAX_SECONDS: Type.Integer({ minimum: 1, default: 12 * 60 * 60 }),
  /**
   * Origins allowed to make state-changing dashboard requests (comma-separated, e.g.
   * `https://ingest.example.com`). Empty: the request's own scheme and Host.
   */
  DASHBOARD_ORIGINS: Type.String({ default: '' }),
  /** Dashboard requests per minute per client address (pages, assets and its API). */
  DASHBOARD_RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, default: 600 }),
  /** Sign-in attempts per minute per client address. */
  DASHBOARD_SIGNIN_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, default: 10 }),
  /** Sign-in attempts per email (any address) per DASHBOARD_SIGNIN_WINDOW_SECONDS. */
  DASHBOARD_SIGNIN_LIMIT_PER_EMAIL: Type.Integer({ minimum: 1, default: 10 }),
  /** Sign-in attempts on all owners of one account per DASHBOARD_SIGNIN_WINDOW_SECONDS. */
  DASHBOARD_SIGNIN_LIMIT_PER_ACCOUNT: Type.Integer({ minimum: 1, default: 50 }),
  DASHBOARD_SIGNIN_WINDOW_SECONDS: Type.Integer({ minimum: 1, default: 15 * 60 }),
  /**
   * The connection channel to crm-sink (docs/crm-sync.md, "Connection checks"): the Connections
   * page's "Test connection" and CRM property reads, which only crm-sink can make (it alone opens
   * credentials). The token is crm-sink's CRM_SINK_INTERNAL_TOKEN (at least 32 characters); empty:
   * credentials can be stored but not tested.
   */
  CRM_SINK_INTERNAL_URL: Type.String({ default: 'http://127.0.0.1:3104', pattern: '^https?://[^\\s]+$' }),
  CRM_SINK_INTERNAL_TOKEN: Type.String({ default: '', pattern: '^$|^\\S{32,}$' }),
  /** How long the console waits for crm-sink's answer (its own CRM call is bounded by CRM_CONNECTION_CHECK_TIMEOUT_MS). */
  CRM_SINK_INTERNAL_TIMEOUT_MS: Type.Integer({ minimum: 100, default: 20_000 }),
  /**
   * Password hashes (scrypt, 128 MiB each) in progress at once in this process; sign-ins beyond
   * are answered 503 with Retry-After at once, never queued.
   */
  DASHBOARD_PASSWORD_HASH_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 2 }),
  /**
   * Console secret keys (base64, 32 bytes or more; comma-separated, the first one is current):
   * they seal owners' TOTP secrets and sign known-device cookies. Empty: owners cannot enrol a
   * second factor, and known-device cookies use a per-process key (forgotten at restart).
   */
  DASHBOARD_SECRET_KEYS: Type.String({ default: '' }),
  /** The same, read from a file (a mounted Secret); wins over DASHBOARD_SECRET_KEYS. */
  DASHBOARD_SECRET_KEYS_FILE: Type.String({ default: '' }),
  /** Built web app (vite output); empty: services/console/dist/web next to the code. */
  DASHBOARD_WEB_DIR: Type.String({ default: '' }),
});

export type ConsoleConfig = Static<typeof ConsoleConfigSchema>;

export function loadConsoleConfig(env?: Record<string, string | undefined>): ConsoleConfig {
  const config = loadConfig(ConsoleConfigSchema, env);
  checkHttpListenerConfig(config);
  seenIdsKey(config);
  for (const name of ['ADMIN_TOKEN', 'ADMIN_TOKEN_PREVIOUS'] as const) {
    const bytes = Buffer.byteLength(config[name], 'utf8');
    if (bytes > 0 && bytes < MIN_ADMIN_TOKEN_BYTES) {
      throw new AppError(
        'invalid_config',
        `invalid configuration: ${name} must be at least ${MIN_ADMIN_TOKEN_BYTES} bytes (it has ${bytes}); e.g. openssl rand -hex 32`,
      );
    }
  }
  if (config.ADMIN_TOKEN_PREVIOUS !== '' && config.ADMIN_TOKEN === '') {
    throw new AppError('invalid_config', 'invalid configuration: ADMIN_TOKEN_PREVIOUS is set but ADMIN_TOKEN is empty');
  }
  return config;
}

import { AppError, ClickHouseConfig, CommonConfig, ControlPlaneConfig, KafkaConfig, loadConfig, RedisConfig } from '@ingest/platform';
import { CrmCredentialsPublicKeyConfig, CrmOutboundConfig, MIN_ADMIN_TOKEN_BYTES } from '@ingest/domain';
import { type Static, Type } from '@sinclair/typebox';

/**
 * What one gateway process serves (docs/security.md, "The gateway's two roles"): `ingest` the
 * public /v1 API only (it never writes a control topic, so it can run as a Kafka principal
 * that may not), `console` the dashboard and the admin API only (the principal that writes
 * the control plane), `all` both (one process: the local stack, small installs).
 */
export const GATEWAY_ROLES = ['all', 'ingest', 'console'] as const;
export type GatewayRole = (typeof GATEWAY_ROLES)[number];

export const GatewayConfigSchema = Type.Object({
  ...CommonConfig,
  ...KafkaConfig,
  ...ControlPlaneConfig,
  ...ClickHouseConfig,
  ...RedisConfig,
  /** Where CRM credentials may point (checked when the admin API stores one; the crm-sink checks on connect). */
  ...CrmOutboundConfig,
  ...CrmCredentialsPublicKeyConfig,
  GATEWAY_ROLE: Type.Union(
    GATEWAY_ROLES.map((r) => Type.Literal(r)),
    { default: 'all' },
  ),
  GATEWAY_HOST: Type.String({ default: '127.0.0.1' }),
  GATEWAY_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  GATEWAY_OPS_HOST: Type.String({ default: '127.0.0.1' }),
  GATEWAY_OPS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3100 }),
  /**
   * Which proxies may set X-Forwarded-For: `false` (default: the socket address is the
   * client), `true` (trust every hop; only behind a proxy that overwrites the header), a hop
   * count, or a comma-separated list of addresses/CIDRs.
   */
  GATEWAY_TRUST_PROXY: Type.String({ default: 'false' }),
  /** Requests per minute per client IP, shared by all replicas through Redis. */
  RATE_LIMIT_PER_MINUTE: Type.Integer({ minimum: 1, default: 120 }),
  /**
   * Redis unreachable: true (default) serves requests without the per-address rate limit (the
   * monthly allowance still refuses with 503, so nothing is accepted uncounted); false refuses
   * every request with 503 until Redis is back.
   */
  RATE_LIMIT_FAIL_OPEN: Type.Boolean({ default: true }),
  /**
   * Per-account ceilings of the public API (docs/limits.md, "Per-account rate limits"), shared
   * by all replicas through Redis, on top of the per-address limit: requests a second and
   * events a second by plan, far above what a normal customer sends (the monthly allowance is
   * what bills), so only a flood meets them. An idle account may send ACCOUNT_RATE_LIMIT_BURST_SECONDS
   * worth at once. Redis away: as RATE_LIMIT_FAIL_OPEN says.
   */
  ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_FREE: Type.Integer({ minimum: 1, default: 20 }),
  ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_PRO: Type.Integer({ minimum: 1, default: 100 }),
  ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_GROWTH: Type.Integer({ minimum: 1, default: 500 }),
  ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_FREE: Type.Integer({ minimum: 1, default: 200 }),
  ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_PRO: Type.Integer({ minimum: 1, default: 1_000 }),
  ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_GROWTH: Type.Integer({ minimum: 1, default: 5_000 }),
  ACCOUNT_RATE_LIMIT_BURST_SECONDS: Type.Integer({ minimum: 1, maximum: 3_600, default: 10 }),
  /**
   * Uploads (bulk bodies, CSV streams, the dashboard's CSV upload) one account, and one client
   * address, may have open at once on one gateway replica; more are answered 429.
   */
  GATEWAY_MAX_UPLOADS_PER_ACCOUNT: Type.Integer({ minimum: 1, default: 4 }),
  GATEWAY_MAX_UPLOADS_PER_ADDRESS: Type.Integer({ minimum: 1, default: 8 }),
  /** Bytes of writes waiting for their turn; beyond it a request is answered 503 at once (memory bound while Kafka is away). */
  KAFKA_MAX_QUEUED_BYTES: Type.Integer({ minimum: 1_048_576, default: 64 * 1_048_576 }),
  /**
   * The whole request (headers and body) must have arrived within this (408 otherwise). A 50 MB
   * CSV upload needs about 1.4 Mbit/s to make the default.
   */
  GATEWAY_REQUEST_TIMEOUT_MS: Type.Integer({ minimum: 1_000, default: 300_000 }),
  /** The request headers must have arrived within this (408 otherwise); at most the request timeout. */
  GATEWAY_HEADERS_TIMEOUT_MS: Type.Integer({ minimum: 500, default: 10_000 }),
  /**
   * No byte of the body for this long: 408 and the connection closed. Must exceed
   * KAFKA_SEND_TIMEOUT_MS: an upload is not read while its last chunk waits for Kafka.
   */
  GATEWAY_BODY_IDLE_TIMEOUT_MS: Type.Integer({ minimum: 500, default: 15_000 }),
  /** An idle kept-alive connection is closed after this (above the usual 60 s of load balancers). */
  GATEWAY_KEEP_ALIVE_TIMEOUT_MS: Type.Integer({ minimum: 1_000, default: 72_000 }),
  /**
   * Bearer token of the admin API (/admin/v1): the admin named `admin`, role admin. At least 32
   * bytes (`openssl rand -hex 32`). Empty disables the admin API and its listener.
   */
  ADMIN_TOKEN: Type.String({ default: '' }),
  /** While ADMIN_TOKEN is rotated: the old token, still accepted (as `admin`) until this is emptied. At least 32 bytes. */
  ADMIN_TOKEN_PREVIOUS: Type.String({ default: '' }),
  /**
   * The admin API (and its OpenAPI document) listens here only, never on the public port.
   * Loopback by default: reach it on the host, through `kubectl port-forward`, or bind it to
   * an internal address on purpose.
   */
  ADMIN_HOST: Type.String({ default: '127.0.0.1' }),
  ADMIN_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3200 }),
  /** Events whose timestamp is further in the future than this are rejected. */
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
  /** Built web app (vite output); empty: services/gateway/dist/web next to the code. */
  DASHBOARD_WEB_DIR: Type.String({ default: '' }),
});

export type GatewayConfig = Static<typeof GatewayConfigSchema>;

/** The surfaces a gateway of this role serves. */
export function gatewayServes(role: GatewayRole): { api: boolean; console: boolean } {
  return { api: role !== 'console', console: role !== 'ingest' };
}

export function loadGatewayConfig(env?: Record<string, string | undefined>): GatewayConfig {
  const config = loadConfig(GatewayConfigSchema, env);
  if (config.GATEWAY_HEADERS_TIMEOUT_MS > config.GATEWAY_REQUEST_TIMEOUT_MS) {
    throw new AppError('invalid_config', 'invalid configuration: GATEWAY_HEADERS_TIMEOUT_MS must not exceed GATEWAY_REQUEST_TIMEOUT_MS');
  }
  if (config.GATEWAY_BODY_IDLE_TIMEOUT_MS <= config.KAFKA_SEND_TIMEOUT_MS) {
    throw new AppError('invalid_config', 'invalid configuration: GATEWAY_BODY_IDLE_TIMEOUT_MS must exceed KAFKA_SEND_TIMEOUT_MS');
  }
  for (const name of ['ADMIN_TOKEN', 'ADMIN_TOKEN_PREVIOUS'] as const) {
    const bytes = Buffer.byteLength(config[name], 'utf8');
    if (bytes > 0 && bytes < MIN_ADMIN_TOKEN_BYTES) {
      throw new AppError(
        'invalid_config',
        `invalid configuration: ${name} must be at least ${MIN_ADMIN_TOKEN_BYTES} bytes (it has ${bytes}); e.g. openssl rand -hex 32`,
      );
    }
  }
  if (config.GATEWAY_ROLE === 'ingest' && config.ADMIN_TOKEN !== '') {
    throw new AppError(
      'invalid_config',
      'invalid configuration: ADMIN_TOKEN is set but GATEWAY_ROLE=ingest serves no admin API (set it on the console gateway)',
    );
  }
  if (config.ADMIN_TOKEN_PREVIOUS !== '' && config.ADMIN_TOKEN === '') {
    throw new AppError('invalid_config', 'invalid configuration: ADMIN_TOKEN_PREVIOUS is set but ADMIN_TOKEN is empty');
  }
  return config;
}

/** GATEWAY_TRUST_PROXY as fastify's trustProxy option (a hop count trusts that many proxies). */
export function parseTrustProxy(value: string): boolean | string[] | ((address: string, hop: number) => boolean) {
  const v = value.trim();
  if (v === '' || v === 'false') return false;
  if (v === 'true') return true;
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    return (_address, hop) => hop < hops;
  }
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

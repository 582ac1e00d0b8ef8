import { SeenIdsConfig, seenIdsKey } from '@ingest/domain';
import { AppError, ClickHouseConfig, CommonConfig, ControlPlaneConfig, KafkaConfig, loadConfig, RedisConfig } from '@ingest/platform';
import { checkHttpListenerConfig, HttpListenerConfig, UploadSlotsConfig } from '@ingest/http';
import { type Static, Type } from '@sinclair/typebox';
import { accountRateLimitsOf, checkAccountRateLimits } from './limits/account-rate.limiter.js';

/**
 * GATEWAY_ROLE once chose what one gateway process served: `ingest` (the public /v1 API),
 * `console` (the dashboard and the admin API) or `all`. The console is its own service now
 * (services/console), so the gateway serves /v1 only: `ingest` and `all` are accepted for a
 * release and mean exactly that; `console` is refused with a pointer to the console service
 * (docs/configuration.md, "Upgrading: the console service").
 */
export const GATEWAY_ROLES = ['all', 'ingest', 'console'] as const;
export type GatewayRole = (typeof GATEWAY_ROLES)[number];

export const GatewayConfigSchema = Type.Object({
  ...CommonConfig,
  ...KafkaConfig,
  ...ControlPlaneConfig,
  ...ClickHouseConfig,
  ...RedisConfig,
  ...HttpListenerConfig,
  ...UploadSlotsConfig,
  /** The seen-id memory's key (issue 26): the same on every gateway and console. */
  ...SeenIdsConfig,
  GATEWAY_ROLE: Type.Union(
    GATEWAY_ROLES.map((r) => Type.Literal(r)),
    { default: 'ingest', description: 'deprecated: the gateway serves the ingestion API only' },
  ),
  GATEWAY_HOST: Type.String({ default: '127.0.0.1' }),
  GATEWAY_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000 }),
  GATEWAY_OPS_HOST: Type.String({ default: '127.0.0.1' }),
  GATEWAY_OPS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3100 }),
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
  /** Bytes of writes waiting for their turn; beyond it a request is answered 503 at once (memory bound while Kafka is away). */
  KAFKA_MAX_QUEUED_BYTES: Type.Integer({ minimum: 1_048_576, default: 64 * 1_048_576 }),
  /** Events whose timestamp is further in the future than this are rejected. */
  MAX_FUTURE_SKEW_MS: Type.Integer({ minimum: 0, default: 24 * 60 * 60 * 1000 }),
});

export type GatewayConfig = Static<typeof GatewayConfigSchema>;

export function loadGatewayConfig(env?: Record<string, string | undefined>): GatewayConfig {
  const config = loadConfig(GatewayConfigSchema, env);
  if (config.GATEWAY_ROLE === 'console') {
    throw new AppError(
      'invalid_config',
      'invalid configuration: GATEWAY_ROLE=console is no longer a gateway role: the dashboard and the admin API are the console service now (SERVICE=console, services/console; docs/configuration.md, "Upgrading: the console service")',
    );
  }
  checkHttpListenerConfig(config);
  checkAccountRateLimits(accountRateLimitsOf(config));
  seenIdsKey(config);
  return config;
}

/** A deprecated setting in use, worded for the start-up log (empty: none). */
export function gatewayDeprecations(config: GatewayConfig): string[] {
  return config.GATEWAY_ROLE === 'all'
    ? ['GATEWAY_ROLE=all is deprecated and now means the ingestion API only: the dashboard and the admin API are the console service (docs/configuration.md)']
    : [];
}

import { AppError } from '@ingest/platform';
import { type Static, type TObject, Type } from '@sinclair/typebox';

/**
 * The settings of an HTTP listener of ours, the gateway's and the console's alike. They keep
 * the names they had when one gateway process served both (GATEWAY_..., RATE_LIMIT_...), so a
 * console deployment made from a `GATEWAY_ROLE=console` gateway's environment keeps its values.
 */
export const HttpListenerConfig = {
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
   * `Strict-Transport-Security: max-age=…` on answers to requests that came over TLS (at the
   * service, or at a proxy trusted by GATEWAY_TRUST_PROXY that sets X-Forwarded-Proto); 0: never.
   */
  GATEWAY_HSTS_MAX_AGE_SECONDS: Type.Integer({ minimum: 0, default: 31_536_000 }),
};

/**
 * Uploads (bulk bodies, CSV streams, the dashboard's CSV upload) one account, and one client
 * address, may have open at once on one replica; more are answered 429.
 */
export const UploadSlotsConfig = {
  GATEWAY_MAX_UPLOADS_PER_ACCOUNT: Type.Integer({ minimum: 1, default: 4 }),
  GATEWAY_MAX_UPLOADS_PER_ADDRESS: Type.Integer({ minimum: 1, default: 8 }),
};

/** What the base app reads of a service's configuration: the listener's settings and the Redis key prefix. */
export type HttpListenerSettings = Static<TObject<typeof HttpListenerConfig>> & { REDIS_KEY_PREFIX: string };

/** The rules between the listener's timeouts and Kafka's that a schema cannot say. */
export function checkHttpListenerConfig(config: HttpListenerSettings & { KAFKA_SEND_TIMEOUT_MS: number }): void {
  if (config.GATEWAY_HEADERS_TIMEOUT_MS > config.GATEWAY_REQUEST_TIMEOUT_MS) {
    throw new AppError('invalid_config', 'invalid configuration: GATEWAY_HEADERS_TIMEOUT_MS must not exceed GATEWAY_REQUEST_TIMEOUT_MS');
  }
  if (config.GATEWAY_BODY_IDLE_TIMEOUT_MS <= config.KAFKA_SEND_TIMEOUT_MS) {
    throw new AppError('invalid_config', 'invalid configuration: GATEWAY_BODY_IDLE_TIMEOUT_MS must exceed KAFKA_SEND_TIMEOUT_MS');
  }
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

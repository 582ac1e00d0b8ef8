import type { CredentialOpener, CrmCredential, MappingReader, StoredCrmCredential } from '@ingest/domain';
import type { Component, Logger, Redis } from '@ingest/platform';
import type { AdapterHttpOptions, BearerSource } from '../adapters/http.client.js';
import { createSharedTokenBuckets } from '../rate/shared-token-bucket.js';
import { createConnectionChecks } from './connection.checks.js';
import { createConnectionServer } from './connection.server.js';

export interface ConnectionChannelDeps {
  host: string;
  port: number;
  tokens: readonly string[];
  credentials: Pick<MappingReader, 'crmCredential'>;
  openCredential: CredentialOpener;
  /** The sink's token source for OAuth/JWT bearer credentials (createCrmSink's `bearerFor`), so a test uses the current token. */
  bearerFor?: (stored: StoredCrmCredential, credential: CrmCredential) => BearerSource | undefined;
  redis: Redis;
  redisKeyPrefix?: string;
  /** Checks per account per minute (CRM_CONNECTION_CHECKS_PER_MINUTE), as a bucket refilled evenly. */
  checksPerMinute: number;
  /** The sink's HTTP options (outbound policy, connect timeout) with the channel's own timeout and cap. */
  http: AdapterHttpOptions;
  freshnessWaitMs?: number;
  logger: Logger;
}

/** The connection channel (connection.server.ts) with its checks and its per-account budget; main.ts and the tests build it here. */
export function createConnectionChannel(deps: ConnectionChannelDeps): Component & { readonly port: number } {
  return createConnectionServer({
    host: deps.host,
    port: deps.port,
    tokens: deps.tokens,
    credentials: deps.credentials,
    openCredential: deps.openCredential,
    ...(deps.bearerFor ? { bearerFor: deps.bearerFor } : {}),
    checks: createConnectionChecks(deps.http),
    takeToken: createSharedTokenBuckets({
      redis: deps.redis,
      keyPrefix: deps.redisKeyPrefix,
      bucket: 'crm:connection-checks',
      rate: { ratePerSecond: deps.checksPerMinute / 60, burst: deps.checksPerMinute },
    }),
    freshnessWaitMs: deps.freshnessWaitMs ?? 5_000,
    logger: deps.logger,
  });
}

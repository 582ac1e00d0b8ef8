import type { ControlPlane, OutboundPolicy } from '@ingest/domain';
import type { Redis } from '@ingest/platform';
import { createConnectionChannel } from '@ingest/crm-sink';
import { testCredentialKeys } from '../credential-keys.js';
import { testLogger } from '../fixtures.js';

export const TEST_CHANNEL_TOKEN = 'test-connection-channel-token-0123456789';

/**
 * crm-sink's connection channel in-process, as main.ts builds it, on the test's control plane and
 * Redis: what the console's Connections page asks to test a credential. Stop it when done.
 */
export async function startConnectionChannel(options: {
  port: number;
  controlPlane: ControlPlane;
  redis: Redis;
  redisKeyPrefix?: string;
  outboundPolicy: OutboundPolicy;
  token?: string;
  checksPerMinute?: number;
  timeoutMs?: number;
  maxResponseBytes?: number;
}): Promise<{ stop(): Promise<void> }> {
  const timeoutMs = options.timeoutMs ?? 2_000;
  const channel = createConnectionChannel({
    host: '127.0.0.1',
    port: options.port,
    tokens: [options.token ?? TEST_CHANNEL_TOKEN],
    credentials: options.controlPlane,
    openCredential: testCredentialKeys().opener,
    redis: options.redis,
    redisKeyPrefix: options.redisKeyPrefix ?? '',
    checksPerMinute: options.checksPerMinute ?? 60,
    http: {
      outboundPolicy: options.outboundPolicy,
      headersTimeoutMs: timeoutMs,
      bodyTimeoutMs: timeoutMs,
      requestTimeoutMs: timeoutMs,
      maxResponseBytes: options.maxResponseBytes ?? 1024 * 1024,
    },
    logger: testLogger(),
  });
  await channel.start();
  return channel;
}

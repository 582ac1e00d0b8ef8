import { FAKE_CRM_OUTBOUND } from '../fake-crm/fake-crm.js';
import { freePort } from '../ports.js';
import { startConnectionChannel, TEST_CHANNEL_TOKEN } from './connection-channel.fixture.js';
import { createGatewayFixture, type GatewayFixture } from './gateway.fixture.js';

export interface ChannelConsole {
  gw: GatewayFixture;
  /** Stops the channel, then closes the fixture. */
  close(): Promise<void>;
}

/**
 * The console (the gateway fixture) with crm-sink's connection channel in process on the same
 * control plane and Redis, on a port chosen first (the console's CRM_SINK_INTERNAL_URL names
 * it); both may reach the fake CRM on loopback (CRM_ALLOW_HTTP, CRM_ALLOWED_CIDRS,
 * FAKE_CRM_OUTBOUND): what the Connections and mapping tests of the dashboard need.
 */
export async function startChannelConsole(options: {
  /** The channel's Redis key prefix starts with it. */
  label: string;
  /** Further console settings. */
  env?: Record<string, string>;
  channelTimeoutMs?: number;
}): Promise<ChannelConsole> {
  const port = await freePort();
  const gw = await createGatewayFixture({
    CRM_ALLOW_HTTP: 'true',
    CRM_ALLOWED_CIDRS: '127.0.0.1/32',
    CRM_SINK_INTERNAL_URL: `http://127.0.0.1:${port}`,
    CRM_SINK_INTERNAL_TOKEN: TEST_CHANNEL_TOKEN,
    ...options.env,
  });
  try {
    const channel = await startConnectionChannel({
      port,
      controlPlane: gw.controlPlane,
      redis: gw.redis,
      redisKeyPrefix: `${options.label}-${port}:`,
      outboundPolicy: FAKE_CRM_OUTBOUND,
      ...(options.channelTimeoutMs === undefined ? {} : { timeoutMs: options.channelTimeoutMs }),
    });
    return {
      gw,
      async close() {
        await channel.stop();
        await gw.close();
      },
    };
  } catch (err) {
    await gw.close();
    throw err;
  }
}

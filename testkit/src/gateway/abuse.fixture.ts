/**
 * The gateway of the abuse tests: the real app on real Kafka, Redis and ClickHouse (the gateway
 * fixture), listening on a loopback port so attacks use real sockets, trusting X-Forwarded-For
 * so every tenant of a test has an address of its own, and with a high per-address rate limit
 * so the neighbour's steady traffic is judged on latency, not on the 120/min limit (the rate
 * limit has its own test).
 */
import { createGatewayFixture, type GatewayFixture, randomClientIp } from './gateway.fixture.js';
import { Neighbour } from './neighbour.js';

export interface AbuseGateway {
  gw: GatewayFixture;
  baseUrl: string;
  port: number;
  /** A second tenant (own account, key and address) ready to send normal traffic. */
  neighbour(): Promise<Neighbour>;
  close(): Promise<void>;
}

export async function startAbuseGateway(env: Record<string, string> = {}): Promise<AbuseGateway> {
  const gw = await createGatewayFixture({ GATEWAY_TRUST_PROXY: 'true', RATE_LIMIT_PER_MINUTE: '1000000', ...env });
  const baseUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  const port = Number(new URL(baseUrl).port);
  return {
    gw,
    baseUrl,
    port,
    async neighbour() {
      const { apiKey } = await gw.newAccount('growth');
      return new Neighbour({ baseUrl, apiKey, ip: randomClientIp() });
    },
    close: () => gw.close(),
  };
}

export { csvMultipart } from './multipart.js';

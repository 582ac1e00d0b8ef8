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

/** A multipart/form-data body with one file part `file`. */
export function csvMultipart(content: string | Buffer): { body: Buffer; contentType: string } {
  const boundary = `----abuse${Math.random().toString(16).slice(2)}`;
  const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="events.csv"\r\nContent-Type: text/csv\r\n\r\n`);
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return {
    body: Buffer.concat([head, Buffer.isBuffer(content) ? content : Buffer.from(content), tail]),
    contentType: `multipart/form-data; boundary=${boundary}`,
  };
}

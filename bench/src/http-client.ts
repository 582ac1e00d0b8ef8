/**
 * A minimal keep-alive HTTP/1.1 client on node:http. Every request leaves from the bench's own
 * loopback address (127.x.y.z), so the gateway's per-address rate-limit counter in Redis is the
 * bench's alone and never touches the 127.0.0.1 counter other local gateways and tests share.
 */
import { Agent, request as httpRequest } from 'node:http';

export interface HttpResponse {
  status: number;
  body: string;
}

export interface HttpClient {
  request(method: string, path: string, options?: { body?: string; headers?: Record<string, string> }): Promise<HttpResponse>;
  close(): void;
}

export function createHttpClient(baseUrl: string, options: { localAddress: string; maxSockets: number; timeoutMs?: number }): HttpClient {
  const url = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: options.maxSockets, maxFreeSockets: options.maxSockets });
  const timeoutMs = options.timeoutMs ?? 30_000;
  return {
    request(method, path, { body, headers = {} } = {}) {
      return new Promise<HttpResponse>((resolve, reject) => {
        const req = httpRequest(
          {
            host: url.hostname,
            port: url.port,
            path,
            method,
            agent,
            localAddress: options.localAddress,
            timeout: timeoutMs,
            headers: body === undefined ? headers : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
            res.on('error', reject);
          },
        );
        req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out after ${timeoutMs} ms`)));
        req.on('error', reject);
        req.end(body);
      });
    },
    close: () => agent.destroy(),
  };
}

/** A random loopback address other than 127.0.0.1 (Linux routes all of 127/8 to lo). */
export function randomLoopbackAddress(): string {
  const octet = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1));
  return `127.${octet(1, 254)}.${octet(0, 255)}.${octet(1, 254)}`;
}

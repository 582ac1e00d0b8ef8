import { Agent } from 'undici';
import { guardedConnector, type Resolve } from '../guarded-connect.js';
import type { OutboundPolicy } from '../outbound-policy.js';
import type { FormSender } from './token-endpoint.js';

/** Token answers are small; anything larger is not read. */
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;

/**
 * The sink's HTTP for OAuth token and revocation endpoints: the same outbound address policy as
 * the CRM calls (checked on the URL and on every address connected to), a whole-call timeout, no
 * redirects (undici does not follow them), a bounded answer. Returns the status and JSON body;
 * throws on network failure, which the token endpoint module reads as "unavailable".
 */
export function createTokenHttp(options: {
  policy: OutboundPolicy;
  timeoutMs: number;
  connectTimeoutMs?: number;
  /** Name resolution: dns.lookup; tests pass a stub to point a name at an address. */
  resolve?: Resolve;
}): {
  send: FormSender;
  close(): Promise<void>;
} {
  const agent = new Agent({
    connect: guardedConnector({
      policy: options.policy,
      timeoutMs: options.connectTimeoutMs ?? Math.min(options.timeoutMs, 5_000),
      ...(options.resolve ? { resolve: options.resolve } : {}),
    }),
    keepAliveTimeout: 30_000,
  });
  const send: FormSender = async (request) => {
    const check = options.policy.checkUrl(request.url);
    if (!check.ok) throw new Error(`token endpoint refused by the outbound address policy: ${check.reason}`);
    const url = new URL(request.url);
    const body = request.form ? new URLSearchParams(request.form).toString() : undefined;
    const response = await agent.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: request.method,
      headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: body ?? null,
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_TOKEN_RESPONSE_BYTES) {
        response.body.destroy();
        throw new Error(`token endpoint answered more than ${MAX_TOKEN_RESPONSE_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    let parsed: unknown;
    try {
      parsed = text.trim() === '' ? undefined : (JSON.parse(text) as unknown);
    } catch {
      parsed = undefined;
    }
    return { status: response.statusCode, body: parsed };
  };
  return { send, close: () => agent.close() };
}

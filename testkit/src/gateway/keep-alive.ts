/**
 * A keep-alive client as SDKs and `fetch` use one: one connection (node:http Agent, keepAlive,
 * maxSockets 1) for a request the server refuses and the request after it. What broke (issue 27,
 * item 3): the CSV route answered 400 while the rest of the upload lay unread on the socket, so
 * the next request queued behind it until the keep-alive timeout (72 s) closed the connection.
 */
import { Agent, type IncomingHttpHeaders, request as httpRequest } from 'node:http';

export interface SentRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer;
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  elapsedMs: number;
  /** Whether the request went on a connection an earlier request had used. */
  reusedSocket: boolean;
}

export interface RefusalThenNext {
  refused: Answer;
  next: Answer;
}

/**
 * Sends `refused`, then `next` on the same agent (so on the same connection unless the server
 * said `Connection: close` or closed it). `next` fails after `timeoutMs` instead of waiting for
 * the server's keep-alive timeout.
 */
export async function refusalThenNext(baseUrl: string, refused: SentRequest, next: SentRequest, timeoutMs = 10_000): Promise<RefusalThenNext> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const first = await sendOnAgent(agent, baseUrl, refused, timeoutMs);
    const second = await sendOnAgent(agent, baseUrl, next, timeoutMs);
    return { refused: first, next: second };
  } finally {
    agent.destroy();
  }
}

/** One request on `agent` (a keep-alive agent reuses its connection); rejects on a connection error or after `timeoutMs`. */
export function sendOnAgent(agent: Agent, baseUrl: string, sent: SentRequest, timeoutMs: number): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...sent.headers };
    if (sent.body) headers['content-length'] = String(sent.body.length);
    const req = httpRequest(new URL(sent.path, baseUrl), { method: sent.method, agent, headers });
    const timer = setTimeout(() => {
      req.destroy(new Error(`${sent.method} ${sent.path}: no answer within ${timeoutMs} ms (reused socket: ${String(req.reusedSocket)})`));
    }, timeoutMs);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          elapsedMs: Math.round(performance.now() - started),
          reusedSocket: req.reusedSocket,
        });
      });
    });
    // A server that answers early and closes may cut the upload short (EPIPE, ECONNRESET): the
    // answer, if it came, is what counts.
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end(sent.body);
  });
}

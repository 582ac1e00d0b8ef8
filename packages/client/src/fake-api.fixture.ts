/**
 * A scripted stand-in for the API's `POST /v1/events` on a real socket (so the client's own
 * fetch, gzip, timeouts and resets are what is tested). Each request is answered by the next
 * step of the script, then by the default (202 accepting every event, as the gateway answers).
 * Differences from the gateway: no authentication, validation or rate limiting of its own; the
 * script says what each answer is.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

export interface RecordedRequest {
  at: number;
  url: string | undefined;
  headers: IncomingMessage['headers'];
  /** The body's bytes as sent (compressed when `content-encoding` says so). */
  wireBytes: number;
  /** The body as sent, for the requests that are no JSON (multipart CSV uploads). */
  raw: Buffer;
  events: { eventId: string; [k: string]: unknown }[];
}

export type Step =
  | { status: number; headers?: Record<string, string>; body?: unknown }
  /** A 202 whose receipt accepts every event but those at `reject` (with their code). */
  | { acceptExcept: Record<number, string>; headers?: Record<string, string> }
  | { reset: true }
  | { hang: true }
  | { raw: string; status: number; contentType?: string };

export interface FakeApi {
  url: string;
  requests: RecordedRequest[];
  script(...steps: Step[]): void;
  /** Delay before each default answer (a slow server). */
  slowBy(ms: number): void;
  close(): Promise<void>;
}

export function receiptFor(events: RecordedRequest['events'], reject: Record<number, string> = {}) {
  const errors = Object.entries(reject).map(([i, code]) => ({ index: Number(i), field: `/events/${i}/email`, code, message: `fake ${code}` }));
  const accepted = events.filter((_, i) => reject[i] === undefined);
  return {
    accepted: accepted.length,
    rejected: errors.length,
    requestId: 'req-fake',
    eventIds: accepted.map((e) => e.eventId),
    ...(errors.length ? { errors } : {}),
  };
}

export async function startFakeApi(): Promise<FakeApi> {
  const steps: Step[] = [];
  const requests: RecordedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  let slow = 0;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const json = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
      const isJson = req.headers['content-type'] === 'application/json' && json.byteLength > 0;
      const events = isJson ? (JSON.parse(json.toString('utf8')) as { events: RecordedRequest['events'] }).events : [];
      requests.push({ at: Date.now(), url: req.url, headers: req.headers, wireBytes: raw.byteLength, raw, events });
      const step = steps.shift();
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (step === undefined) {
        setTimeout(() => send(202, receiptFor(events)), slow);
      } else if ('reset' in step) {
        req.socket.destroy();
      } else if ('hang' in step) {
        hanging.add(res);
      } else if ('raw' in step) {
        res.writeHead(step.status, { 'content-type': step.contentType ?? 'text/html' });
        res.end(step.raw);
      } else if ('acceptExcept' in step) {
        send(202, receiptFor(events, step.acceptExcept), step.headers);
      } else {
        send(step.status, step.body ?? {}, step.headers);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script: (...s) => void steps.push(...s),
    slowBy: (ms) => void (slow = ms),
    close: async () => {
      for (const res of hanging) res.socket?.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

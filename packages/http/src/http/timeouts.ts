import { randomUUID } from 'node:crypto';
import { type ServerOptions, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import { METRIC_NAMES, type Registry, sharedCounter } from '@ingest/platform';
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import type { Counter } from 'prom-client';
import { PROBLEM_CONTENT_TYPE, ProblemError, problemBody } from './problem.js';
import { sendProblem } from './error-handler.js';

/**
 * How long a client may take, at each stage of a request, before the gateway gives up on it.
 * Without these a client that sends its headers and a few body bytes and then stalls held a
 * socket, a request and (for uploads) an open job for ever. Settings: GATEWAY_*_TIMEOUT_MS.
 */
export interface HttpTimeouts {
  /** The whole request (headers and body) must have arrived by then: Node's requestTimeout. */
  requestMs: number;
  /** The headers must have arrived by then: Node's headersTimeout. */
  headersMs: number;
  /** No byte from the client for this long while its body is being read: 408. */
  bodyIdleMs: number;
  /** An idle kept-alive connection is closed after this long. */
  keepAliveMs: number;
}

/**
 * Node checks the request and headers deadlines of open connections on an interval (30 s by
 * default, so a deadline could be overshot by 30 s); once a second keeps them within a second.
 */
const CONNECTIONS_CHECKING_INTERVAL_MS = 1_000;

export type TimeoutKind = 'body_idle' | 'request';

/** One counter per registry: the public and the admin listener share it. */
export function createTimeoutCounter(registry: Registry): Counter<'kind'> {
  const counter = sharedCounter(registry, {
    name: METRIC_NAMES.httpTimeouts,
    help: 'Requests cut because the client was too slow: body_idle (no byte while the body was read), request (headers or whole request past its deadline)',
    labelNames: ['kind'],
  });
  for (const kind of ['body_idle', 'request']) counter.inc({ kind }, 0);
  return counter;
}

/**
 * The fastify options that set the deadlines on the HTTP server: connectionTimeout is the
 * socket's idle timer during a request (its expiry is handled by `registerBodyIdleTimeout`),
 * the others are Node's. Node answers an expired request or headers deadline by emitting
 * clientError; `clientErrorHandler` answers it with a 408 problem and counts it.
 */
export function timeoutServerOptions(
  timeouts: HttpTimeouts,
  counter: Counter<'kind'>,
): Pick<FastifyServerOptions, 'connectionTimeout' | 'keepAliveTimeout' | 'requestTimeout' | 'clientErrorHandler'> & { http: ServerOptions } {
  return {
    connectionTimeout: timeouts.bodyIdleMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    requestTimeout: timeouts.requestMs,
    http: { headersTimeout: timeouts.headersMs, requestTimeout: timeouts.requestMs, connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS },
    clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket) {
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      let status = 400;
      let problem = problemBody('validation', 'The request could not be read as HTTP.', randomUUID());
      if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
        counter.inc({ kind: 'request' });
        status = 408;
        problem = problemBody(
          'requestTimeout',
          `The request did not arrive in time: headers within ${timeouts.headersMs} ms, the whole request within ${timeouts.requestMs} ms.`,
          randomUUID(),
        );
      } else if (err.code === 'HPE_HEADER_OVERFLOW') {
        status = 431;
        problem = {
          ...problemBody('validation', 'The request headers are too large.', randomUUID()),
          status: 431,
          type: '/problems/headers-too-large',
          title: 'Headers too large',
        };
      }
      const body = JSON.stringify(problem);
      if (socket.writable) {
        socket.write(
          `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
        );
      }
      socket.destroy();
    },
  };
}

/**
 * A request whose body stops arriving for `bodyIdleMs` is answered 408 and its connection
 * closed. The socket's idle timer (connectionTimeout) fires `timeout` on the request while its
 * body is incomplete; the reader of the body (fastify's JSON reader, the multipart parser of a
 * CSV upload) is failed with a 408 problem, so the route cleans up (a CSV upload aborts its
 * job) and the error handler answers. A request whose body is complete is never cut here: its
 * handler is bounded by the deadlines of what it waits for (Kafka, Redis, ClickHouse).
 */
export function registerBodyIdleTimeout(app: FastifyInstance, timeouts: HttpTimeouts, counter: Counter<'kind'>): void {
  app.addHook('onRequest', async (request, reply) => {
    request.raw.once('timeout', () => onBodyIdle(request, reply, timeouts, counter));
    // With a listener here Node leaves the socket alone when the request is complete and only
    // our own handler is slow (Node would otherwise destroy it without an answer).
    reply.raw.on('timeout', keepSocket);
  });
}

function keepSocket(): void {}

function onBodyIdle(request: FastifyRequest, reply: FastifyReply, timeouts: HttpTimeouts, counter: Counter<'kind'>): void {
  counter.inc({ kind: 'body_idle' });
  request.log.warn({ bodyIdleMs: timeouts.bodyIdleMs, bytesRead: request.raw.socket?.bytesRead }, 'request body stalled; answering 408');
  const problem = new ProblemError('requestTimeout', `No part of the request body arrived for ${timeouts.bodyIdleMs} ms; the connection is closed.`, {
    headers: { connection: 'close' },
  });
  if (reply.raw.headersSent) {
    request.raw.socket?.destroy();
    return;
  }
  // The body's reader listens for errors of the request stream: failing it lets the route and
  // the error handler answer (an upload aborts its job first). Nobody reading yet: answer here.
  if (request.raw.listenerCount('error') > 0) request.raw.emit('error', problem);
  else void sendProblem(reply, problem);
}

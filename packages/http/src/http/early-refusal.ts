import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The most body bytes this route ever reads, when it is not fastify's bodyLimit (a multipart
     * upload's limits are its parser's): how much of a refused request's remainder is read.
     */
    bodyDrainLimit?: number;
  }
}

/** How long the remainder of a refused request's body may take to arrive before the connection is closed. */
export const EARLY_REFUSAL_DRAIN_MS = 10_000;

/**
 * An answer sent before the request's body was read to its end never leaves the connection
 * wedged (issue 27, item 3). A route that refuses early (a CSV header of 200,000 empty columns
 * after a few KB of a large upload, a key refused before the body is parsed) stopped reading;
 * the rest of the body stayed on the socket, and Node does not discard it once a reader had
 * started (the multipart parser's pipe, paused), so a keep-alive client's next request queued
 * behind it until the keep-alive timeout (72 s) closed the connection.
 *
 * So when a reply is sent with the body incomplete, one of two things happens:
 * - the declared remainder (Content-Length) is within the route's own limit (its bodyLimit, or
 *   `bodyDrainLimit` for uploads): the connection stays open and the remainder is read and
 *   discarded, for at most EARLY_REFUSAL_DRAIN_MS, after which the connection is closed;
 * - otherwise (larger than the route ever reads, or chunked without a length): the answer says
 *   `Connection: close` and Node closes the connection once it is sent; the client opens a new one.
 */
export function registerEarlyRefusalDrain(app: FastifyInstance, drainMs = EARLY_REFUSAL_DRAIN_MS): void {
  app.addHook('onSend', async (request, reply, payload) => {
    const req = request.raw;
    // `complete` is Node's: false until the whole message (headers and body) was parsed. Requests
    // of `app.inject` have no such field, and no connection to wedge.
    if (req.complete !== false || req.readableEnded) return payload;
    const declared = Number(req.headers['content-length']);
    const limit = drainLimitOf(request);
    const closing = String(reply.getHeader('connection') ?? '').toLowerCase() === 'close';
    if (closing || !Number.isSafeInteger(declared) || declared > limit) {
      reply.header('connection', 'close');
      request.log.info(
        { declaredBytes: Number.isNaN(declared) ? null : declared, limitBytes: limit },
        'answered before the body was read; closing the connection',
      );
      return payload;
    }
    drainRemainder(request, req, declared, drainMs);
    return payload;
  });
}

function drainLimitOf(request: FastifyRequest): number {
  return request.bodyDrainLimit ?? request.routeOptions.bodyLimit ?? 0;
}

/** Reads and discards the rest of the body (at most `limit` bytes, within `drainMs`), so the next request on the connection is parsed. */
function drainRemainder(request: FastifyRequest, req: IncomingMessage, limit: number, drainMs: number): void {
  // Whoever was reading (the multipart parser, a body parser that gave up) is done: the answer is sent.
  req.unpipe();
  req.removeAllListeners('data');
  let read = 0;
  const giveUp = (reason: string) => {
    clearTimeout(timer);
    request.log.info({ readBytes: read, reason }, 'the remainder of a refused request did not arrive in bounds; closing the connection');
    req.socket?.destroy();
  };
  const timer = setTimeout(() => giveUp('time'), drainMs);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    read += chunk.length;
    if (read > limit) giveUp('bytes');
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

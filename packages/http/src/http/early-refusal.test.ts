/**
 * No servers beyond a fastify app on a loopback port, talked to over a raw socket so what
 * happens to the connection is seen byte by byte. The route refuses at once after a reader
 * started and paused (as the multipart parser does when a CSV header is refused): the bounds of
 * early-refusal.ts decide whether the rest of the body is read or the connection closed.
 */
import { connect, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { registerEarlyRefusalDrain } from './early-refusal.js';

const DRAIN_MS = 300;
const LIMIT = 1024 * 1024;
let app: FastifyInstance | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function start(): Promise<number> {
  app = Fastify({ bodyLimit: LIMIT, forceCloseConnections: true });
  registerEarlyRefusalDrain(app, DRAIN_MS);
  app.addContentTypeParser('application/octet-stream', (_request, _payload, done) => done(null));
  app.post('/upload', async (request, reply) => {
    // A reader that takes a little and then stops: the request is "being consumed", so Node
    // does not discard the rest when the answer is sent.
    request.raw.pipe(new PassThrough({ highWaterMark: 1 }));
    return reply.code(400).send({ refused: true });
  });
  app.get('/next', async () => ({ ok: true }));
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return Number(new URL(url).port);
}

/** A raw client: collects what the server sends and notes when it closes. */
function client(port: number): { socket: Socket; text: () => string; closed: Promise<number> } {
  const socket = connect(port, '127.0.0.1');
  let received = '';
  const started = performance.now();
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now() - started)));
  return { socket, text: () => received, closed };
}

async function until(condition: () => boolean, what: string, ms = 2_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setImmediate(r));
  }
}

const upload = (length: number) => `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`;

describe('registerEarlyRefusalDrain', () => {
  it('reads the remainder of a refused body within the limit, so the next request on the connection is answered', async () => {
    const c = client(await start());
    const size = 512 * 1024;
    c.socket.write(upload(size));
    c.socket.write(Buffer.alloc(size, 'x'));
    await until(() => c.text().includes('{"refused":true}'), 'the 400');
    expect(c.text()).toMatch(/^HTTP\/1\.1 400/);
    expect(c.text().toLowerCase()).not.toContain('connection: close');
    c.socket.write('GET /next HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => c.text().includes('{"ok":true}'), 'the next answer on the same connection');
    c.socket.destroy();
  });

  it('closes the connection when the remainder stops arriving for the drain time', async () => {
    const c = client(await start());
    c.socket.write(upload(512 * 1024));
    c.socket.write(Buffer.alloc(1024, 'x'));
    await until(() => c.text().includes('{"refused":true}'), 'the 400');
    const closedAfter = await c.closed;
    expect(closedAfter).toBeGreaterThanOrEqual(DRAIN_MS);
    expect(closedAfter).toBeLessThan(DRAIN_MS + 1_500);
  });

  it('answers Connection: close when the declared body is larger than the route reads', async () => {
    const c = client(await start());
    // A declared 1 MiB + 1 byte is more than the route ever reads: not drained, closed.
    c.socket.write(upload(LIMIT + 1));
    c.socket.write(Buffer.alloc(1024, 'x'));
    await until(() => /\r\n\r\n.*\}/s.test(c.text()), 'the answer');
    expect(c.text().toLowerCase()).toContain('connection: close');
    await c.closed;
  });

  it('answers Connection: close for a chunked body of unknown length', async () => {
    const c = client(await start());
    c.socket.write('POST /upload HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n');
    c.socket.write(Buffer.alloc(1024, 'x'));
    await until(() => c.text().includes('{"refused":true}'), 'the 400');
    expect(c.text().toLowerCase()).toContain('connection: close');
    await c.closed;
  });
});

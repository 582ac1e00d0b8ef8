import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { waitFor } from '@ingest/testkit';
import { compress, compressionBomb, type TestCoding } from '@ingest/testkit/gateway';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BoundedDecoder, parseContentEncoding, SUPPORTED_CONTENT_CODINGS } from './content-encoding.js';
import { registerErrorHandling } from './error-handler.js';
import { registerJsonBodyParser } from './json-body.js';
import { ProblemError } from './problem.js';
import { registerRequestDecoding } from './request-decoding.js';

const LIMIT = 1024 * 1024;
let app: FastifyInstance;

beforeAll(async () => {
  app = Fastify();
  registerJsonBodyParser(app);
  registerRequestDecoding(app);
  registerErrorHandling(app);
  app.post('/echo', { bodyLimit: LIMIT }, async (request) => ({ received: request.body }));
  app.get('/ping', async () => ({ ok: true }));
  await app.ready();
});

afterAll(async () => {
  await app.close();
});

function post(body: Buffer, encoding?: string) {
  return app.inject({
    method: 'POST',
    url: '/echo',
    headers: { 'content-type': 'application/json', ...(encoding === undefined ? {} : { 'content-encoding': encoding }) },
    payload: body,
  });
}

const events = { events: Array.from({ length: 100 }, (_, i) => ({ eventName: 'Signed Up', email: `u${i}@example.com`, properties: { plan: 'pro' } })) };

describe('compressed request bodies', () => {
  it.each<[string, TestCoding]>([
    ['gzip', 'gzip'],
    ['x-gzip', 'gzip'],
    ['deflate', 'deflate'],
    ['deflate', 'deflate-raw'],
    ['br', 'br'],
    ['zstd', 'zstd'],
    ['GZIP', 'gzip'],
  ])('decodes Content-Encoding: %s (%s data) before parsing the JSON', async (header, coding) => {
    const body = compress(coding, JSON.stringify(events));
    expect(body.length).toBeLessThan(JSON.stringify(events).length / 5);
    const res = await post(body, header);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ received: events });
  });

  it('ignores the header on a request without a body', async () => {
    const res = await app.inject({ method: 'GET', url: '/ping', headers: { 'content-encoding': 'compress' } });
    expect(res.statusCode, res.body).toBe(200);
  });

  it('reads identity and an empty header as uncompressed', async () => {
    for (const header of ['identity', '']) {
      const res = await post(Buffer.from('{"a":1}'), header);
      expect(res.statusCode, res.body).toBe(200);
    }
  });

  it('answers a 300 MB gzip bomb with 413 naming the decompressed limit, within a second', async () => {
    const bomb = compressionBomb('gzip', 300 * 1024 * 1024);
    expect(bomb.length).toBeLessThan(400_000);
    const started = performance.now();
    const res = await post(bomb, 'gzip');
    const elapsed = performance.now() - started;
    expect(res.statusCode, res.body).toBe(413);
    expect(res.json()).toMatchObject({
      type: '/problems/payload-too-large',
      detail: `The body decompresses to more than ${LIMIT} bytes (Content-Encoding: gzip); the limit counts decompressed bytes.`,
      limitBytes: LIMIT,
      encoding: 'gzip',
    });
    expect(elapsed).toBeLessThan(1_000);
  });

  it('answers truncated data with 400 naming the encoding', async () => {
    const body = compress('gzip', JSON.stringify(events));
    const res = await post(body.subarray(0, body.length - 20), 'gzip');
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json()).toMatchObject({ detail: 'The body is not valid gzip data (Content-Encoding: gzip): unexpected end of file.', encoding: 'gzip' });
  });

  it.each(['gzip', 'deflate', 'br', 'zstd'])('answers a plain JSON body that claims Content-Encoding: %s with 400, not 500', async (header) => {
    const res = await post(Buffer.from(JSON.stringify(events)), header);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().detail).toMatch(new RegExp(`^The body is not valid ${header} data \\(Content-Encoding: ${header}\\): `));
  });

  it('answers an unknown coding, or two, with 415 listing the supported ones', async () => {
    for (const header of ['compress', 'gzip, br']) {
      const res = await post(Buffer.from('{}'), header);
      expect(res.statusCode, res.body).toBe(415);
      expect(res.headers['accept-encoding']).toBe(SUPPORTED_CONTENT_CODINGS.join(', '));
      expect(res.json()).toMatchObject({ type: '/problems/unsupported-media-type', supportedEncodings: [...SUPPORTED_CONTENT_CODINGS] });
    }
  });
});

describe('BoundedDecoder', () => {
  async function drain(decoder: BoundedDecoder, input: Buffer): Promise<{ out: Buffer; error?: unknown }> {
    Readable.from([input]).pipe(decoder);
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of decoder) chunks.push(chunk as Buffer);
      return { out: Buffer.concat(chunks) };
    } catch (error) {
      return { out: Buffer.concat(chunks), error };
    }
  }

  it('stops inflating a bomb at the limit: it never lets more out, nor reads much past it', async () => {
    const bomb = compressionBomb('zstd', 300 * 1024 * 1024);
    const decoder = new BoundedDecoder({ coding: 'zstd', limitBytes: LIMIT, subject: 'the body' });
    const { error } = await drain(decoder, bomb);
    expect(error).toBeInstanceOf(ProblemError);
    expect((error as ProblemError).status).toBe(413);
    expect(decoder.decodedLength).toBeLessThanOrEqual(LIMIT + 128 * 1024);
  });

  it('refuses data past afterBytes that decodes to more than maxRatio times its size, and lets real data through', async () => {
    const guard = { ratio: 250, afterBytes: 8 * 1024 * 1024 };
    const bomb = await drain(
      new BoundedDecoder({ coding: 'gzip', limitBytes: 50_000_000, subject: 'the file', maxRatio: guard }),
      compressionBomb('gzip', 50_000_000),
    );
    expect((bomb.error as ProblemError).detail).toBe(
      'The file decompresses to more than 250 times its compressed size (Content-Encoding: gzip); send it uncompressed or less compressed.',
    );
    const rows = Array.from({ length: 200_000 }, (_, i) => `signup,2026-01-01T00:00:00Z,user${i}@example.com`).join('\n');
    const real = await drain(new BoundedDecoder({ coding: 'gzip', limitBytes: 50_000_000, subject: 'the file', maxRatio: guard }), compress('gzip', rows));
    expect(real.error).toBeUndefined();
    expect(real.out.length).toBeGreaterThan(guard.afterBytes);
  });

  it('sniffs a gzip file and passes anything else through (sniff-gzip)', async () => {
    const csv = 'event_name,timestamp,email\nsignup,2026-01-01T00:00:00Z,a@b.io\n';
    expect((await drain(new BoundedDecoder({ coding: 'sniff-gzip', limitBytes: LIMIT, subject: 'the file' }), compress('gzip', csv))).out.toString()).toBe(csv);
    expect((await drain(new BoundedDecoder({ coding: 'sniff-gzip', limitBytes: LIMIT, subject: 'the file' }), Buffer.from(csv))).out.toString()).toBe(csv);
    const lying = await drain(new BoundedDecoder({ coding: 'sniff-gzip', limitBytes: LIMIT, subject: 'the file', requireCoded: true }), Buffer.from(csv));
    expect((lying.error as ProblemError).detail).toBe(
      'The file is not valid gzip data (Content-Encoding: gzip): the data does not start with the gzip signature (1f 8b).',
    );
  });

  it.each([
    ['passes through', 'sniff-gzip' as const, (b: Buffer) => b],
    ['decodes', 'gzip' as const, (b: Buffer) => compress('gzip', b)],
  ])('holds back its writer while nobody reads (%s): it never buffers the body', async (_name, coding, encode) => {
    // Random bytes: incompressible, so the coded stream is as large as the decoded one.
    const chunks = Array.from({ length: 160 }, () => encode(randomBytes(64 * 1024)));
    const source = Readable.from(chunks);
    const decoder = new BoundedDecoder({ coding, limitBytes: 50_000_000, subject: 'the file' });
    source.pipe(decoder);
    // Nobody reads the decoder: once the pipe has stopped, little has been taken from the source.
    await waitFor(() => source.readableFlowing === false && decoder.writableNeedDrain, { description: 'the pipe paused by backpressure', timeoutMs: 3_000 });
    expect(decoder.readableLength).toBeLessThanOrEqual(256 * 1024);
    expect(decoder.decodedLength).toBeLessThan(2 * 1024 * 1024);
    let read = 0;
    for await (const chunk of decoder) read += (chunk as Buffer).length;
    expect(read).toBe(160 * 64 * 1024);
  });

  it('parses the Content-Encoding header', () => {
    expect(parseContentEncoding(undefined)).toBeUndefined();
    expect(parseContentEncoding(' Br ')).toBe('br');
    expect(() => parseContentEncoding('gzip, gzip')).toThrow(ProblemError);
  });
});

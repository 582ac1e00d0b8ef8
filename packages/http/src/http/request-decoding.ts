import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest, preParsingAsyncHookHandler, RouteOptions } from 'fastify';
import { problemResponses } from './problem.js';
import { BoundedDecoder, type ContentCoding, type DecoderOptions, parseContentEncoding, SUPPORTED_CONTENT_CODINGS } from './content-encoding.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The request's Content-Encoding when its body is multipart: the multipart parser reads the
     * raw request itself (not fastify's payload stream), so the upload handler decodes it
     * (decodedMultipartRequest).
     */
    multipartCoding?: ContentCoding;
  }
}

/**
 * Compressed request bodies (`Content-Encoding: gzip | deflate | br | zstd`) on every route of
 * `app`, present and later: each route gets a preParsing hook, after its own and its scopes'
 * (authentication, upload slots), so an unauthenticated request never makes us inflate anything,
 * that swaps the body stream for a BoundedDecoder limited to the route's bodyLimit, counted on the
 * decompressed bytes. An unknown coding is a 415 before any byte is read. Routes that take a body
 * document the `Content-Encoding` header in the OpenAPI document.
 */
export function registerRequestDecoding(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    const own = route.preParsing === undefined ? [] : Array.isArray(route.preParsing) ? route.preParsing : [route.preParsing];
    route.preParsing = [...own, decodeRequestBody];
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (route.schema !== undefined && methods.some((m) => BODY_METHODS.has(m))) {
      route.schema = { ...route.schema, headers: withContentEncodingHeader(route.schema.headers), response: with415(route.schema.response) };
    }
  });
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/**
 * The Content-Encoding request header, for OpenAPI. Not enforced by the schema (the preParsing
 * hook answers an unknown coding with 415 before validation).
 */
export const contentEncodingHeaderSchema = {
  type: 'string',
  description: `The body's compression, one of ${SUPPORTED_CONTENT_CODINGS.join(', ')} (or identity). Limits count the decompressed bytes; an unknown coding is answered 415, data that is not of the coding 400.`,
  examples: ['gzip'],
} as const;

/** Every route that reads a body may answer 415 for a coding it does not know: the document says so (the API fuzzer sends such codings). */
function with415(response: unknown): unknown {
  if (response === undefined || typeof response !== 'object' || response === null) return response;
  const byStatus = response as Record<string, unknown>;
  return '415' in byStatus ? response : { ...byStatus, ...problemResponses(415) };
}

function withContentEncodingHeader(headers: unknown): unknown {
  const base = (headers ?? { type: 'object', properties: {} }) as { type?: unknown; properties?: Record<string, unknown> };
  if (base.type !== 'object') return headers;
  return { ...base, properties: { ...base.properties, 'content-encoding': contentEncodingHeaderSchema } };
}

const decodeRequestBody: preParsingAsyncHookHandler = async (request, _reply, payload) => {
  // A request without a body (a GET that carries the header anyway) has nothing to decode.
  if (!hasBody(request)) return payload;
  const coding = parseContentEncoding(request.headers['content-encoding']);
  if (coding === undefined) return payload;
  if (isMultipart(request)) {
    request.multipartCoding = coding;
    return payload;
  }
  const decoder = new BoundedDecoder({ coding, limitBytes: request.routeOptions.bodyLimit ?? 1024 * 1024, subject: 'the body' });
  decodeFrom(payload, decoder);
  return decoder;
};

/**
 * Pipes the request into the decoder, and fails the decoder when the request fails: the body-idle
 * timeout (timeouts.ts) fails the request stream with its 408 so that the body's reader answers
 * it (an upload aborts its job first), and a client that goes away must end the reading too.
 */
function decodeFrom(source: NodeJS.ReadableStream, decoder: BoundedDecoder): void {
  // A reader that takes the body sees the decoder's failure through its own listener. When none
  // does (a 415 for a content type no parser takes, a refusal before the body is read), the
  // failure of data nobody reads must not reach the process as an unhandled 'error' (pipe
  // rethrows when the destination has no listener): found by the fuzzer, the gateway exited.
  decoder.on('error', () => undefined);
  source.on('error', (err: Error) => decoder.destroy(err));
  source.once('close', () => {
    if (!(source as Readable).readableEnded)
      decoder.destroy(Object.assign(new Error('the client closed the connection before the body ended'), { code: 'ECONNRESET' }));
  });
  source.pipe(decoder);
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function isMultipart(request: FastifyRequest): boolean {
  return String(request.headers['content-type'] ?? '')
    .toLowerCase()
    .startsWith('multipart/');
}

/**
 * A view of `request` whose raw body is the decoded one, for the multipart parser (which reads
 * `request.raw`): busboy parses the decompressed stream, and `limitBytes` bounds it whole. The
 * real request (headers, socket, early refusal) is untouched.
 */
export function decodedMultipartRequest(request: FastifyRequest, limitBytes: number, maxRatio?: DecoderOptions['maxRatio']): FastifyRequest {
  const coding = request.multipartCoding;
  if (coding === undefined) return request;
  const decoder = new BoundedDecoder({ coding, limitBytes, subject: 'the body', maxRatio });
  const raw = request.raw;
  decodeFrom(raw, decoder);
  // busboy reads the boundary from the headers of what it parses.
  const decodedRaw = Object.assign(decoder as Readable, { headers: raw.headers });
  return Object.create(request, { raw: { value: decodedRaw } }) as FastifyRequest;
}

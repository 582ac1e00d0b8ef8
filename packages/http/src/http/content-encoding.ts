import { Duplex, type Transform } from 'node:stream';
import zlib from 'node:zlib';
import { ProblemError } from './problem.js';

/** The request content codings the API decodes (RFC 9110 section 8.4); `zstd` where the runtime's zlib has it (Node >= 22.15). */
export type ContentCoding = 'gzip' | 'deflate' | 'br' | 'zstd';

const zstdAvailable = typeof (zlib as { createZstdDecompress?: unknown }).createZstdDecompress === 'function';

/** In the order the 415 lists them. */
export const SUPPORTED_CONTENT_CODINGS: readonly ContentCoding[] = zstdAvailable ? ['gzip', 'deflate', 'br', 'zstd'] : ['gzip', 'deflate', 'br'];

const ALIASES: Record<string, ContentCoding> = { gzip: 'gzip', 'x-gzip': 'gzip', deflate: 'deflate', br: 'br', zstd: 'zstd' };

/**
 * The coding of a `Content-Encoding` header: undefined for none (absent, empty, `identity`), 415
 * for one we do not decode or for more than one (no client stacks codings; decoding a chain
 * would multiply the work per byte for nothing).
 */
export function parseContentEncoding(header: string | string[] | undefined): ContentCoding | undefined {
  const raw = Array.isArray(header) ? header.join(',') : (header ?? '');
  const codings = raw
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c !== '' && c !== 'identity');
  if (codings.length === 0) return undefined;
  const supported = SUPPORTED_CONTENT_CODINGS.join(', ');
  if (codings.length > 1) {
    throw unsupported(`Content-Encoding lists ${codings.length} codings; send the body with one of ${supported}.`);
  }
  const coding = ALIASES[codings[0] as string];
  if (coding === undefined || !SUPPORTED_CONTENT_CODINGS.includes(coding)) {
    throw unsupported(`Content-Encoding "${(codings[0] as string).slice(0, 40)}" is not supported; send the body uncompressed or with one of ${supported}.`);
  }
  return coding;
}

function unsupported(detail: string): ProblemError {
  return new ProblemError('unsupportedMediaType', detail, {
    extensions: { supportedEncodings: [...SUPPORTED_CONTENT_CODINGS] },
    headers: { 'accept-encoding': SUPPORTED_CONTENT_CODINGS.join(', ') },
  });
}

export interface DecoderOptions {
  /**
   * `gzip`, `deflate`, `br`, `zstd`: the coding the sender declared. `sniff-gzip`: a file part that
   * may or may not be gzip, decided by its first two bytes (an uncompressed file passes through).
   */
  coding: ContentCoding | 'sniff-gzip';
  /** The most decoded bytes let through; one more and the stream fails with 413. */
  limitBytes: number;
  /** Names the limit in the 413, e.g. "the body" or "the file". */
  subject: string;
  /** The 400 says so when the data is not of this coding (a `.csv.gz` file name that is not gzip). */
  requireCoded?: boolean;
  /**
   * The ratio guard, for limits so large that reading up to them takes long (a 50 MB CSV): once
   * more than `afterBytes` are decoded, data that decodes to more than `ratio` times its coded size
   * is refused with 413. Real data stays far below (CSV and JSON events compress 10 to 100 times);
   * a bomb of zeros is around 1,000 (gzip) to 100,000 (zstd).
   */
  maxRatio?: { ratio: number; afterBytes: number };
}

const GZIP_MAGIC = [0x1f, 0x8b] as const;

/**
 * Each output chunk is one trip to the thread pool and back to the event loop: 64 KiB (zlib's
 * default is 16 KiB) makes a 16 MiB body 256 trips instead of 1,024, for 48 KiB more per decoder.
 */
const DECODER_OPTIONS = { chunkSize: 64 * 1024 };

/**
 * A writable/readable pair that decodes what is written into it, never letting more than
 * `limitBytes` decoded bytes out: past that it fails with a 413 at once and stops the decoder, so
 * a bomb (a few hundred KB inflating to GBs of zeros) costs no more than inflating the limit. The
 * work runs in zlib's streams, which inflate on libuv's thread pool, off the event loop; the
 * decoder holds at most its stream buffers (backpressure both ways), never the body.
 *
 * `receivedEncodedLength` counts the bytes written: fastify compares it with Content-Length and
 * with the route's bodyLimit. Corrupt or truncated data fails with a 400 naming the coding.
 * The source is never destroyed by a failure here: it is only unpiped, and the early-refusal hook
 * reads or closes what remains of the request.
 */
export class BoundedDecoder extends Duplex {
  receivedEncodedLength = 0;
  decodedLength = 0;
  private decoder: Transform | undefined;
  /** The bytes seen before the coding could be decided (a first chunk of one byte). */
  private head: Buffer = Buffer.alloc(0);
  private decided = false;
  private passThrough = false;
  /** Passing through: the write waiting for the reader to want more (backpressure without a decoder). */
  private waitingWrite: (() => void) | undefined;
  private effective: string;

  constructor(private readonly options: DecoderOptions) {
    super();
    this.effective = options.coding === 'sniff-gzip' ? 'gzip' : options.coding;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.receivedEncodedLength += chunk.length;
    if (!this.decided) {
      this.head = Buffer.concat([this.head, chunk]);
      if (this.head.length < 2) return callback();
      chunk = this.head;
      this.head = Buffer.alloc(0);
      this.decide(chunk);
      if (this.destroyed) return callback();
    }
    this.forward(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (!this.decided) {
      // Fewer than two bytes in all: an empty body, or one too short to be of any coding.
      const head = this.head;
      this.head = Buffer.alloc(0);
      if (head.length === 0) {
        this.push(null);
        return callback();
      }
      this.decide(head);
      if (this.destroyed) return callback();
      this.forward(head, () => undefined);
    }
    if (this.passThrough) this.push(null);
    else this.decoder?.end();
    callback();
  }

  override _read(): void {
    this.decoder?.resume();
    const waiting = this.waitingWrite;
    this.waitingWrite = undefined;
    waiting?.();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.decoder?.destroy();
    callback(error);
  }

  private forward(chunk: Buffer, callback: (error?: Error | null) => void): void {
    if (this.passThrough) {
      if (this.emitDecoded(chunk)) callback();
      else this.waitingWrite = () => callback();
      return;
    }
    const decoder = this.decoder as Transform;
    if (decoder.write(chunk)) callback();
    else decoder.once('drain', () => callback());
  }

  private decide(head: Buffer): void {
    this.decided = true;
    const isGzip = head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1];
    if (this.options.coding === 'sniff-gzip' && !isGzip) {
      if (this.options.requireCoded) {
        this.destroy(this.corrupt('the data does not start with the gzip signature (1f 8b)'));
        return;
      }
      this.passThrough = true;
      return;
    }
    const decoder = this.createDecoder(head);
    this.decoder = decoder;
    decoder.on('data', (out: Buffer) => this.emitDecoded(out));
    decoder.once('end', () => this.push(null));
    decoder.once('error', (err: Error) => this.destroy(this.corrupt(err.message)));
  }

  private createDecoder(head: Buffer): Transform {
    switch (this.options.coding) {
      case 'gzip':
      case 'sniff-gzip':
        return zlib.createGunzip(DECODER_OPTIONS);
      case 'deflate':
        // HTTP's "deflate" is the zlib format (RFC 1950), but some clients send raw deflate
        // (RFC 1951): a zlib header is a CMF/FLG pair whose 16-bit value is a multiple of 31.
        return isZlibHeader(head) ? zlib.createInflate(DECODER_OPTIONS) : zlib.createInflateRaw(DECODER_OPTIONS);
      case 'br':
        return zlib.createBrotliDecompress(DECODER_OPTIONS);
      case 'zstd':
        return (zlib as unknown as { createZstdDecompress(options: object): Transform }).createZstdDecompress(DECODER_OPTIONS);
    }
  }

  /** False when the reader has enough for now (or the stream failed). */
  private emitDecoded(out: Buffer): boolean {
    if (this.destroyed) return false;
    this.decodedLength += out.length;
    const guard = this.options.maxRatio;
    if (guard && !this.passThrough && this.decodedLength > guard.afterBytes && this.decodedLength > guard.ratio * this.consumedCodedBytes()) {
      this.destroy(
        new ProblemError(
          'payloadTooLarge',
          `${capitalise(this.options.subject)} decompresses to more than ${guard.ratio} times its compressed size (Content-Encoding: ${this.effective}); send it uncompressed or less compressed.`,
          { extensions: { maxRatio: guard.ratio, encoding: this.effective } },
        ),
      );
      return false;
    }
    if (this.decodedLength > this.options.limitBytes) {
      this.destroy(
        new ProblemError(
          'payloadTooLarge',
          `${capitalise(this.options.subject)} decompresses to more than ${this.options.limitBytes} bytes (Content-Encoding: ${this.effective}); the limit counts decompressed bytes.`,
          { extensions: { limitBytes: this.options.limitBytes, encoding: this.effective } },
        ),
      );
      return false;
    }
    const more = this.push(out);
    if (!more) this.decoder?.pause();
    return more;
  }

  /** What the decoder engine has taken in (zlib's bytesWritten): bytes still queued before it do not count toward the ratio. */
  private consumedCodedBytes(): number {
    return (this.decoder as unknown as { bytesWritten?: number } | undefined)?.bytesWritten ?? this.receivedEncodedLength;
  }

  private corrupt(reason: string): ProblemError {
    return new ProblemError(
      'validation',
      `${capitalise(this.options.subject)} is not valid ${this.effective} data (Content-Encoding: ${this.effective}): ${reason}.`,
      {
        errors: [{ code: 'invalid_encoding', message: `the data could not be decoded as ${this.effective}: ${reason}` }],
        extensions: { encoding: this.effective },
      },
    );
  }
}

function isZlibHeader(head: Buffer): boolean {
  const cmf = head[0] ?? 0;
  const flg = head[1] ?? 0;
  return (cmf & 0x0f) === 8 && cmf >> 4 <= 7 && ((cmf << 8) | flg) % 31 === 0;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

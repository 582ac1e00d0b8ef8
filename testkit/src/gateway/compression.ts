/**
 * Compressed request bodies as producers send them, and compression bombs: zeros that inflate
 * hundreds of times over. A bomb is one compressed block of zeros repeated (gzip members and zstd
 * frames concatenate into one stream), so making a 300 MB bomb costs one 10 MB compression.
 */
import zlib from 'node:zlib';

export type TestCoding = 'gzip' | 'deflate' | 'deflate-raw' | 'br' | 'zstd';

/** `body` compressed with `coding` (`deflate-raw`: raw RFC 1951 data, which some clients send as "deflate"). */
export function compress(coding: TestCoding, body: Buffer | string): Buffer {
  const data = Buffer.isBuffer(body) ? body : Buffer.from(body);
  switch (coding) {
    case 'gzip':
      return zlib.gzipSync(data);
    case 'deflate':
      return zlib.deflateSync(data);
    case 'deflate-raw':
      return zlib.deflateRawSync(data);
    case 'br':
      return zlib.brotliCompressSync(data);
    case 'zstd':
      return zlib.zstdCompressSync(data);
  }
}

const BLOCK_BYTES = 10 * 1024 * 1024;
const blocks = new Map<string, Buffer>();

/** About `decompressedBytes` of zeros (whole 10 MB blocks) as gzip members or zstd frames. */
export function compressionBomb(coding: 'gzip' | 'zstd', decompressedBytes: number): Buffer {
  let block = blocks.get(coding);
  if (block === undefined) {
    block = compress(coding, Buffer.alloc(BLOCK_BYTES));
    blocks.set(coding, block);
  }
  const count = Math.max(1, Math.ceil(decompressedBytes / BLOCK_BYTES));
  return Buffer.concat(Array.from({ length: count }, () => block));
}

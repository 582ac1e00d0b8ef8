/**
 * What a compressed request body costs the gateway (`npm run bench:encodings`, docs/benchmarks.md):
 * CPU ms per MB decompressed for each Content-Encoding the API decodes, beside parsing the same
 * JSON uncompressed (the work every request does anyway) as the baseline. Bodies are realistic
 * events (unique ids, varied contacts and properties), as a 100-event request and as a 10,000-event
 * bulk job. The gateway decodes with node's zlib streams (BoundedDecoder in @ingest/http wraps
 * them and only counts bytes), so the same streams are timed here, one after another, with the
 * process's CPU time (the thread pool's included). No servers are needed.
 */
import { randomUUID } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';

type Coding = 'gzip' | 'deflate' | 'br' | 'zstd';
const CODINGS: Coding[] = ['gzip', 'deflate', 'br', 'zstd'];
/** Each figure decodes at least this much (and for at least MIN_MS), so timer noise is small. */
const MIN_BYTES = 200 * 1024 * 1024;
const MIN_MS = 1_500;

const FEATURES = ['export', 'dashboards', 'alerts', 'sso', 'api', 'billing', 'invites'];
const NAMES = ['Feature Used', 'Page Viewed', 'Signed Up', 'Report Exported', 'Invite Sent'];

function eventsBody(count: number): Buffer {
  const start = Date.parse('2026-11-01T00:00:00Z');
  const events = Array.from({ length: count }, (_, i) => ({
    eventId: randomUUID(),
    eventName: NAMES[i % NAMES.length],
    email: `user${Math.floor(Math.random() * 50_000)}@company${Math.floor(Math.random() * 3_000)}.example.com`,
    timestamp: new Date(start + Math.floor(Math.random() * 86_400_000)).toISOString(),
    properties: {
      plan: i % 3 === 0 ? 'growth' : 'pro',
      feature: FEATURES[Math.floor(Math.random() * FEATURES.length)],
      path: `/app/${randomUUID().slice(0, 8)}/settings`,
      durationMs: Math.floor(Math.random() * 100_000),
      seats: 1 + Math.floor(Math.random() * 200),
    },
  }));
  return Buffer.from(JSON.stringify({ events }));
}

function compress(coding: Coding, body: Buffer): Buffer {
  // Each client library's default level: gzip/deflate 6, brotli 11 (node's default), zstd 3.
  if (coding === 'gzip') return zlib.gzipSync(body);
  if (coding === 'deflate') return zlib.deflateSync(body);
  if (coding === 'br') return zlib.brotliCompressSync(body);
  return zlib.zstdCompressSync(body);
}

/** As the gateway's decoders are made (content-encoding.ts): 64 KiB output chunks. */
const DECODER_OPTIONS = { chunkSize: 64 * 1024 };

function decoder(coding: Coding): NodeJS.ReadWriteStream {
  if (coding === 'gzip') return zlib.createGunzip(DECODER_OPTIONS);
  if (coding === 'deflate') return zlib.createInflate(DECODER_OPTIONS);
  if (coding === 'br') return zlib.createBrotliDecompress(DECODER_OPTIONS);
  return zlib.createZstdDecompress(DECODER_OPTIONS);
}

interface Figure {
  cpuMsPerMb: number;
  wallMsPerMb: number;
}

/** Repeats `once` (which handles `bytes` decompressed bytes) until enough was done; CPU and wall ms per MB. */
async function measure(bytes: number, once: () => Promise<void> | void): Promise<Figure> {
  for (let i = 0; i < 3; i++) await once();
  const cpu = process.cpuUsage();
  const started = performance.now();
  let done = 0;
  while (done < MIN_BYTES || performance.now() - started < MIN_MS) {
    await once();
    done += bytes;
  }
  const used = process.cpuUsage(cpu);
  const mb = done / 1024 / 1024;
  return { cpuMsPerMb: (used.user + used.system) / 1000 / mb, wallMsPerMb: (performance.now() - started) / mb };
}

async function decode(coding: Coding, compressed: Buffer): Promise<void> {
  await pipeline(
    Readable.from([compressed]),
    decoder(coding),
    new Writable({
      write(_chunk, _encoding, callback) {
        callback();
      },
    }),
  );
}

async function main(): Promise<void> {
  const shapes = [
    { name: '100 events (POST /v1/events)', body: eventsBody(100) },
    { name: '10,000 events (POST /v1/events/bulk)', body: eventsBody(10_000) },
  ];
  console.log(`node ${process.version}, ${process.arch}; CPU time of the whole process (zlib's thread pool included)\n`);
  for (const shape of shapes) {
    const size = shape.body.length;
    console.log(`${shape.name}: ${(size / 1024).toFixed(1)} KB of JSON`);
    const parse = await measure(size, () => {
      JSON.parse(shape.body.toString('utf8'));
    });
    console.log(
      `  ${'identity'.padEnd(8)} ${'-'.padStart(9)} ${'-'.padStart(6)}  decode ${'-'.padStart(6)}  JSON parse ${parse.cpuMsPerMb.toFixed(2).padStart(6)} CPU ms/MB (baseline)`,
    );
    for (const coding of CODINGS) {
      const compressed = compress(coding, shape.body);
      const figure = await measure(size, () => decode(coding, compressed));
      const ratio = size / compressed.length;
      console.log(
        `  ${coding.padEnd(8)} ${`${(compressed.length / 1024).toFixed(1)} KB`.padStart(9)} ${`${ratio.toFixed(1)}x`.padStart(6)}  decode ${figure.cpuMsPerMb.toFixed(2).padStart(6)} CPU ms/MB (${((100 * figure.cpuMsPerMb) / parse.cpuMsPerMb).toFixed(0)}% of the parse), ${((figure.cpuMsPerMb * size) / 1024 / 1024).toFixed(3)} CPU ms per body, wall ${figure.wallMsPerMb.toFixed(2)} ms/MB`,
      );
    }
    console.log('');
  }
}

await main();

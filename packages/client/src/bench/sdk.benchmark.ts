/**
 * What the SDK costs one producer process (`npm run bench:client`, docs/benchmarks.md): events/s
 * through `track()` → `close()`, the producer's CPU per event (its own process: the local check,
 * the UUIDv7, JSON, gzip, fetch), and the bytes on the wire per event with and without gzip.
 * The API is a sink in a child process (its CPU is not counted) that answers each batch with
 * the gateway's 202 receipt at once, so the figures are the SDK's ceiling, not the API's: a real
 * gateway allows one address 120 requests a minute (200 events/s).
 *
 * Lives beside the package rather than in bench/: it measures the package's sources (bench/
 * could only import the built dist/, which a fresh checkout does not have).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createClient } from '../client.js';
import type { TrackEvent } from '../event.types.js';

const EVENTS = Number(process.argv[2] ?? 100_000);
const WARMUP = 10_000;
const FEATURES = ['export', 'dashboards', 'alerts', 'sso', 'api', 'billing', 'invites'];
const NAMES = ['Feature Used', 'Page Viewed', 'Signed Up', 'Report Exported', 'Invite Sent'];

const SINK = `
const { createServer } = require('node:http');
const { gunzipSync } = require('node:zlib');
const stats = { requests: 0, wireBytes: 0, jsonBytes: 0, events: 0 };
createServer((req, res) => {
  if (req.url === '/stats') return res.end(JSON.stringify(stats));
  if (req.url === '/reset') { Object.assign(stats, { requests: 0, wireBytes: 0, jsonBytes: 0, events: 0 }); return res.end('{}'); }
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const wire = Buffer.concat(chunks);
    const json = req.headers['content-encoding'] === 'gzip' ? gunzipSync(wire) : wire;
    const events = JSON.parse(json).events;
    Object.assign(stats, { requests: stats.requests + 1, wireBytes: stats.wireBytes + wire.length, jsonBytes: stats.jsonBytes + json.length, events: stats.events + events.length });
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ accepted: events.length, rejected: 0, requestId: 'r', eventIds: events.map((e) => e.eventId) }));
  });
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });
`;

function event(i: number): TrackEvent {
  return {
    eventName: NAMES[i % NAMES.length] ?? 'Feature Used',
    email: `user${Math.floor(Math.random() * 50_000)}@company${Math.floor(Math.random() * 3_000)}.example.com`,
    timestamp: new Date(Date.parse('2026-11-01T00:00:00Z') + Math.floor(Math.random() * 86_400_000)).toISOString(),
    properties: { feature: FEATURES[i % FEATURES.length], plan: i % 3 === 0 ? 'pro' : 'free', seats: i % 50, trial: i % 7 === 0 },
  };
}

async function run(baseUrl: string, compression: 'gzip' | 'none', count: number) {
  const client = createClient({ apiKey: 'svc_live_bench', baseUrl, compression, onError: (e) => console.error(e.code, e.message) });
  const events = Array.from({ length: count }, (_, i) => event(i));
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (const e of events) await client.track(e);
  await client.close();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { seconds, cpuUs: used.user + used.system, stats: client.stats() };
}

const sink = spawn(process.execPath, ['-e', SINK], { stdio: ['ignore', 'pipe', 'inherit'] });
const [port] = (await once(sink.stdout, 'data')) as [Buffer];
const baseUrl = `http://127.0.0.1:${port.toString().trim()}`;
const sinkStats = async () => (await (await fetch(`${baseUrl}/stats`)).json()) as { requests: number; wireBytes: number; jsonBytes: number; events: number };

try {
  await run(baseUrl, 'gzip', WARMUP);
  console.log(`node ${process.version}, ${EVENTS.toLocaleString('en')} events per run, batches of 100, one request at a time`);
  console.log('| Compression | Events/s | CPU µs per event | Requests | Bytes on the wire per event | JSON bytes per event | Ratio |');
  console.log('|---|---|---|---|---|---|---|');
  for (const compression of ['gzip', 'none', 'gzip', 'none'] as const) {
    await fetch(`${baseUrl}/reset`);
    const r = await run(baseUrl, compression, EVENTS);
    const s = await sinkStats();
    if (s.events !== EVENTS || r.stats.accepted !== EVENTS) throw new Error(`sent ${s.events}, accepted ${r.stats.accepted} of ${EVENTS}`);
    console.log(
      `| ${compression} | ${Math.round(EVENTS / r.seconds).toLocaleString('en')} | ${(r.cpuUs / EVENTS).toFixed(1)} | ${s.requests} | ${(s.wireBytes / EVENTS).toFixed(1)} | ${(s.jsonBytes / EVENTS).toFixed(1)} | ${(s.jsonBytes / s.wireBytes).toFixed(1)}× |`,
    );
  }
} finally {
  sink.kill();
}

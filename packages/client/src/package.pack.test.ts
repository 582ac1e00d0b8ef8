/**
 * The package as producers get it: built, packed with `npm pack`, unpacked into a fresh project
 * (only its one dependency, uuid, beside it), then imported by plain Node and type-checked by
 * tsc in strict mode against its declarations alone. No servers.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildClientPackage, PACKAGE_DIR } from './build/client-package.js';

let work: string;
let files: string[];
let app: string;

beforeAll(async () => {
  await buildClientPackage();
  work = mkdtempSync(join(tmpdir(), 'ingest-client-pack-'));
  const [packed] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', work], {
      cwd: PACKAGE_DIR,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  ) as { filename: string; files: { path: string }[] }[];
  files = packed?.files.map((f) => f.path).sort() ?? [];
  app = join(work, 'app');
  const installed = join(app, 'node_modules/@ingest/client');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', join(work, packed?.filename ?? ''), '-C', installed, '--strip-components=1']);
  symlinkSync(realpathSync(join(PACKAGE_DIR, 'node_modules/uuid')), join(app, 'node_modules/uuid'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
}, 60_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packed @ingest/client', () => {
  it('holds the ESM entry, the self-contained browser module, their declarations, README, CHANGELOG and package.json: no sources, tests or fixtures', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'CHANGELOG.md',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/client.d.ts',
        'dist/browser.js',
        'dist/browser.d.ts',
      ]),
    );
    expect(files.filter((f) => /(^src\/|\.test\.|fixture|\.ts$)/.test(f) && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it('stays light: the API schema is inlined as JSON (no TypeBox, no Ajv) and uuid is its one dependency', () => {
    const main = readFileSync(join(app, 'node_modules/@ingest/client/dist/index.js'), 'utf8');
    const browser = readFileSync(join(app, 'node_modules/@ingest/client/dist/browser.js'), 'utf8');
    for (const bundle of [main, browser]) {
      expect(bundle).not.toMatch(/sinclair|typebox|ajv|new Function/i);
      expect(bundle).toMatch(/maxProperties"?:\s*50/);
    }
    expect(main.length).toBeLessThan(64 * 1024);
    expect(browser.length).toBeLessThan(32 * 1024);
    const manifest = JSON.parse(readFileSync(join(app, 'node_modules/@ingest/client/package.json'), 'utf8')) as { dependencies?: object };
    expect(Object.keys(manifest.dependencies ?? {})).toEqual(['uuid']);
  });

  it('works when imported by Node from the unpacked tarball: sends a gzipped batch with UUIDv7 ids and refuses a bad event locally', () => {
    writeFileSync(
      join(app, 'use.mjs'),
      `import { createServer } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { createClient } from '@ingest/client';
const seen = [];
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const events = JSON.parse(gunzipSync(Buffer.concat(chunks))).events;
    seen.push({ encoding: req.headers['content-encoding'], events });
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ accepted: events.length, rejected: 0, requestId: 'r', eventIds: events.map((e) => e.eventId) }));
  });
}).listen(0, '127.0.0.1', async () => {
  const client = createClient({ apiKey: 'svc_live_x', baseUrl: 'http://127.0.0.1:' + server.address().port });
  const refused = await client.track({ eventName: 'x' }).catch((e) => e.code + ' ' + e.errors[0].field + ' ' + e.errors[0].code);
  for (let i = 0; i < 30; i++) await client.track({ eventName: 'Signed Up', email: 'u' + i + '@example.com' });
  await client.close();
  server.close();
  console.log(JSON.stringify({ refused, requests: seen.length, encoding: seen[0].encoding, events: seen[0].events.length, id: seen[0].events[0].eventId, stats: client.stats() }));
});
`,
    );
    const out = JSON.parse(execFileSync(process.execPath, ['use.mjs'], { cwd: app, encoding: 'utf8' })) as Record<string, unknown>;
    expect(out).toMatchObject({ refused: 'invalid_event /email required', requests: 1, encoding: 'gzip', events: 30, stats: { accepted: 30 } });
    expect(out.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
  }, 30_000);

  it('type-checks a strict consumer against its declarations alone (and refuses an unknown event field)', () => {
    writeFileSync(
      join(app, 'use.ts'),
      `import { createClient, IngestClientError, type TrackEvent } from '@ingest/client';
const client = createClient({ apiKey: 'k', baseUrl: 'https://ingest.example.com', queue: { whenFull: 'drop' }, onError: (e: IngestClientError) => void e.code });
const event: TrackEvent = { eventName: 'Signed Up', email: 'ada@example.com', properties: { plan: 'pro' } };
// @ts-expect-error: not a field of the API's events
const typo: TrackEvent = { eventName: 'x', emial: 'ada@example.com' };
export const done: Promise<unknown> = client.track(event).then((r) => r.eventId.length + String(typo));
`,
    );
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          lib: ['es2023', 'dom'],
          types: [],
          noEmit: true,
          skipLibCheck: false,
        },
        files: ['use.ts'],
      }),
    );
    const tsc = join(PACKAGE_DIR, '../../node_modules/typescript/bin/tsc');
    let output = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', app], { cwd: app, encoding: 'utf8', stdio: 'pipe' });
    } catch (err) {
      output = String((err as { stdout?: string }).stdout ?? err);
    }
    expect(output).toBe('');
  }, 30_000);
});

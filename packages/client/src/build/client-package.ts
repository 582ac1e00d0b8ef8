/**
 * The publishable package: `dist/index.js`, one ESM bundle for Node 22+ and browsers (the API's
 * event schema from `@ingest/schemas` inlined as JSON, so no private workspace package is needed at
 * install; `uuid` stays a dependency), and `dist/*.d.ts` declarations from tsc. No CommonJS
 * build: Node 22+ `require()`s ESM (`require(esm)` is on by default since 22.12), and every
 * bundler reads ESM. `npm run build -w @ingest/client` runs it (`build.main.ts`); `package.pack.test.ts` checks
 * the packed tarball.
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';
import * as eventSchema from '@ingest/schemas/ingest-event';

export const PACKAGE_DIR = fileURLToPath(new URL('../../', import.meta.url));

/**
 * `@ingest/schemas/ingest-event` as its values only: the schema is plain JSON once built, so the
 * bundle holds that JSON (a few KB) instead of TypeBox's builder (over 100 KB).
 */
const schemaAsJson: Plugin = {
  name: 'ingest-event-schema-as-json',
  setup(b) {
    b.onResolve({ filter: /^@ingest\/schemas\/ingest-event$/ }, (args) => ({ path: args.path, namespace: 'schema-json' }));
    b.onLoad({ filter: /.*/, namespace: 'schema-json' }, () => ({
      loader: 'js',
      contents: Object.entries(eventSchema)
        .map(([name, value]) => `export const ${name} = ${JSON.stringify(value)};`)
        .join('\n'),
    }));
  },
};

const bundle = (outfile: string, browser: boolean) =>
  build({
    entryPoints: [join(PACKAGE_DIR, 'src/index.ts')],
    outfile,
    bundle: true,
    format: 'esm',
    platform: browser ? 'browser' : 'neutral',
    target: browser ? ['es2022', 'chrome111', 'firefox113', 'safari16.4'] : ['es2022', 'node22'],
    // For bundlers and Node, uuid is a dependency; the browser file stands alone (a <script type="module"> or a CDN).
    external: browser ? [] : ['uuid'],
    minify: browser,
    sourcemap: true,
    legalComments: 'none',
    plugins: [schemaAsJson],
    logLevel: 'warning',
  });

/** `dist/browser.js`: one self-contained, minified ES module for pages (uuid inlined). */
export const buildBrowserBundle = (outfile = join(PACKAGE_DIR, 'dist/browser.js')) => bundle(outfile, true);

export async function buildClientPackage(): Promise<void> {
  const dist = join(PACKAGE_DIR, 'dist');
  rmSync(dist, { recursive: true, force: true });
  await bundle(join(dist, 'index.js'), false);
  await buildBrowserBundle();
  // The browser file is the same API as the main entry: its declarations are the main ones.
  writeFileSync(join(dist, 'browser.d.ts'), "export * from './index.js';\n");
  const tsc = join(PACKAGE_DIR, '../../node_modules/typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', join(PACKAGE_DIR, 'tsconfig.build.json')], { stdio: 'inherit' });
}

/**
 * Production build: each service's main.ts bundled by esbuild into services/<name>/dist/main.js
 * (there, Node resolves the service's own nested node_modules before the root's), and the
 * setup command into dist/setup/main.js. Workspace packages (@ingest/*) are bundled because they are TypeScript
 * sources; third-party packages stay external and come from node_modules at run time.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
import { buildWeb, FIRST_LOAD_JS_BUDGET, firstLoadJsGzipBytes } from '@ingest/gateway/web-bundle';

const root = new URL('..', import.meta.url).pathname;

function dependenciesOf(packageJson: string): string[] {
  const pkg = JSON.parse(readFileSync(packageJson, 'utf8')) as { dependencies?: Record<string, string> };
  return Object.keys(pkg.dependencies ?? {});
}

// Third-party packages of every workspace stay external, the shared packages' too (@clickhouse/client
// of packages/platform cannot be bundled: it requires node built-ins dynamically).
const workspaces = ['schemas', ...['services', 'packages'].flatMap((dir) => readdirSync(join(root, dir)).map((s) => join(dir, s)))];
const external = [...new Set(workspaces.flatMap((w) => dependenciesOf(join(root, w, 'package.json'))))].filter((d) => !d.startsWith('@ingest/'));

const entries: Record<string, { entry: string; outfile: string }> = {
  setup: { entry: join(root, 'scripts/setup.ts'), outfile: join(root, 'dist/setup/main.js') },
};
for (const service of readdirSync(join(root, 'services'))) {
  const main = join(root, 'services', service, 'src/main.ts');
  if (existsSync(main)) entries[service] = { entry: main, outfile: join(root, 'services', service, 'dist/main.js') };
}

await Promise.all(
  Object.values(entries).map(({ entry, outfile }) =>
    build({
      entryPoints: [entry],
      outfile,
      bundle: true,
      platform: 'node',
      target: 'node20',
      format: 'esm',
      sourcemap: true,
      external,
      logLevel: 'warning',
    }),
  ),
);
console.log(
  `built ${Object.entries(entries)
    .map(([name, e]) => `${name} -> ${e.outfile.slice(root.length)}`)
    .join(', ')} (external: ${external.length} packages)`,
);

await buildWeb();
const web = firstLoadJsGzipBytes();
console.log(
  `built dashboard web app -> services/gateway/dist/web (first load: ${(web.bytes / 1024).toFixed(1)} KiB of JavaScript gzipped, budget ${FIRST_LOAD_JS_BUDGET / 1024} KiB)`,
);
if (web.bytes > FIRST_LOAD_JS_BUDGET) {
  console.error('the dashboard first load is over its JavaScript budget');
  process.exit(1);
}

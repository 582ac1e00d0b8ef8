/**
 * Production build: each service's main.ts (and the setup command) bundled by esbuild into
 * dist/<name>/main.js. Workspace packages (@ingest/*) are bundled because they are TypeScript
 * sources; third-party packages stay external and come from node_modules at run time.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url).pathname;

function dependenciesOf(packageJson: string): string[] {
  const pkg = JSON.parse(readFileSync(packageJson, 'utf8')) as { dependencies?: Record<string, string> };
  return Object.keys(pkg.dependencies ?? {});
}

const workspaces = ['schemas', ...readdirSync(join(root, 'services')).map((s) => join('services', s))];
const external = [...new Set(workspaces.flatMap((w) => dependenciesOf(join(root, w, 'package.json'))))].filter((d) => !d.startsWith('@ingest/'));

const entries: Record<string, string> = { setup: join(root, 'scripts/setup.ts') };
for (const service of readdirSync(join(root, 'services'))) {
  const main = join(root, 'services', service, 'src/main.ts');
  if (existsSync(main)) entries[service] = main;
}

await Promise.all(
  Object.entries(entries).map(([name, entry]) =>
    build({
      entryPoints: [entry],
      outfile: join(root, 'dist', name, 'main.js'),
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
console.log(`built ${Object.keys(entries).join(', ')} into dist/ (external: ${external.length} packages)`);

/** Runs esbuild over the bundles of bundles.ts (for `npm run build` and the image check). */
import { execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { readPackage, REPO_ROOT } from '../lib/workspaces.js';
import { bundleEntries, externalPackages } from './bundles.js';

/** Builds every bundle under `outRoot`; returns esbuild's metafile of each (what went in). */
export async function buildBundles(root = REPO_ROOT, outRoot = root): Promise<Map<string, Metafile>> {
  const external = externalPackages(root);
  const version = buildVersion(root);
  const results = await Promise.all(
    bundleEntries(root).map(async (b) => {
      const outfile = join(outRoot, b.outfile);
      const result = await build({
        entryPoints: [join(root, b.entry)],
        outfile,
        bundle: true,
        platform: 'node',
        target: 'node24',
        format: 'esm',
        sourcemap: true,
        external,
        metafile: true,
        // packages/platform/src/build-version.ts
        define: { __INGEST_VERSION__: JSON.stringify(version) },
        logLevel: 'warning',
        ...(b.executable ? { banner: { js: '#!/usr/bin/env node' } } : {}),
      });
      if (b.executable) chmodSync(outfile, 0o755);
      return [b.name, result.metafile] as const;
    }),
  );
  return new Map(results);
}

/** `git describe` of the tree (docs/releases.md); the package.json version where there is no git (the image build). */
export function buildVersion(root = REPO_ROOT): string {
  try {
    return execFileSync('git', ['describe', '--tags', '--match', 'v[0-9]*', '--always', '--dirty'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return `v${String((readPackage('.', root) as { version?: string }).version ?? '0.0.0')}`;
  }
}

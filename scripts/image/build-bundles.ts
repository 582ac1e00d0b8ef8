/** Runs esbuild over the bundles of bundles.ts (for `npm run build` and the image check). */
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { REPO_ROOT } from '../lib/workspaces.js';
import { bundleEntries, externalPackages } from './bundles.js';

/** Builds every bundle under `outRoot`; returns esbuild's metafile of each (what went in). */
export async function buildBundles(root = REPO_ROOT, outRoot = root): Promise<Map<string, Metafile>> {
  const external = externalPackages(root);
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
        logLevel: 'warning',
        ...(b.executable ? { banner: { js: '#!/usr/bin/env node' } } : {}),
      });
      if (b.executable) chmodSync(outfile, 0o755);
      return [b.name, result.metafile] as const;
    }),
  );
  return new Map(results);
}

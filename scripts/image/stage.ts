/**
 * What the app image holds, decided in one place. The Dockerfile's build stage runs this (as
 * the bundle dist/build/stage-image.mjs, after `npm prune --omit=dev`) to copy exactly these
 * paths into /stage, and the runtime stage copies /stage and nothing else; the image check
 * (image.test.ts) reads the same list. So no source, test, fixture or fake CRM reaches the
 * image: only the bundles, the production node_modules and the migrations.
 */
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../lib/workspaces.js';
import { bundleEntries } from './bundles.js';

/** Where the build stage gathers the image's files (the Dockerfile names it too; a test compares). */
export const STAGE_DIR = '/stage';
/** The staging script's own bundle: built, run in the build stage, never shipped. */
export const STAGE_BUNDLE = 'dist/build/stage-image.mjs';

/** Paths (files or folders, relative to the root) copied into the image's /app. */
export function imageEntries(root = REPO_ROOT): string[] {
  const entries = new Set(['package.json', 'node_modules', 'deploy/clickhouse/migrations']);
  for (const bundle of bundleEntries(root)) {
    if (bundle.buildOnly) continue;
    const dir = dirname(bundle.outfile);
    entries.add(dir);
    // A workspace's bundle resolves the workspace's own nested node_modules first.
    if (basename(dir) === 'dist' && dirname(dir) !== '.') {
      const workspace = dirname(dir);
      entries.add(`${workspace}/package.json`);
      if (existsSync(join(root, workspace, 'node_modules'))) entries.add(`${workspace}/node_modules`);
    }
  }
  return [...entries].sort();
}

/** Copies the image's paths into `dest`, keeping symlinks as they are (npm's workspace links). */
export function stage(root: string, dest: string): string[] {
  const skip = join(root, dirname(STAGE_BUNDLE));
  const entries = imageEntries(root);
  for (const entry of entries) {
    const from = join(root, entry);
    if (!existsSync(from)) throw new Error(`image entry ${entry} is missing: run the build first`);
    mkdirSync(dirname(join(dest, entry)), { recursive: true });
    cpSync(from, join(dest, entry), { recursive: true, verbatimSymlinks: true, filter: (src) => src !== skip && !src.startsWith(skip + sep) });
  }
  return entries;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dest = process.argv[2] ?? STAGE_DIR;
  // The bundle lives in <root>/dist/build/, the source in <root>/scripts/image/: both two levels down.
  const root = join(dirname(process.argv[1]), '..', '..');
  console.log(`staged into ${dest}: ${stage(root, dest).join(', ')}`);
}

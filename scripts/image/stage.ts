/**
 * What the app images hold, decided in one place. The Dockerfile's build stage runs this (as
 * the bundle dist/build/stage-image.mjs, after `npm prune --omit=dev`) to copy exactly these
 * paths into /stage: what every image has (the production node_modules, the migrations, the
 * operator command `ingest`) into /stage/base, and each deployable's own bundle into
 * /stage/<service>. The runtime stage copies /stage/base, each service's target adds its own
 * folder and nothing else, so the gateway's image holds no console code and no image holds
 * source, test, fixture or fake CRM. The image check (image.test.ts) reads the same lists.
 */
import { cpSync, existsSync, mkdirSync } from 'node:fs';
import { basename, dirname, join, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../lib/workspaces.js';
import { bundleEntries } from './bundles.js';

/** Where the build stage gathers the images' files (the Dockerfile names it too; a test compares). */
export const STAGE_DIR = '/stage';
/** The staging script's own bundle: built, run in the build stage, never shipped. */
export const STAGE_BUNDLE = 'dist/build/stage-image.mjs';
/** The folder under STAGE_DIR that every image holds. */
export const BASE_PART = 'base';

/** A service's bundle lives in services/<name>/dist (bundles.ts); other bundles are shared. */
const serviceOf = (outfile: string) => /^services\/([^/]+)\/dist\//.exec(outfile)?.[1];

/** The deployables that have an image target of their own (each service with a main.ts). */
export function imageServices(root = REPO_ROOT): string[] {
  return bundleEntries(root).flatMap((b) => (b.buildOnly ? [] : (serviceOf(b.outfile) ?? [])));
}

/**
 * Paths (files or folders, relative to the root) copied into an image's /app: what every image
 * holds plus `service`'s own; without `service`, the union over every image.
 */
export function imageEntries(root = REPO_ROOT, service?: string): string[] {
  const parts = imageParts(root);
  const chosen = service === undefined ? [...parts.values()].flat() : [...(parts.get(BASE_PART) ?? []), ...(parts.get(service) ?? [])];
  return [...new Set(chosen)].sort();
}

/** The staged parts: BASE_PART and one per service, each a list of paths. */
export function imageParts(root = REPO_ROOT): Map<string, string[]> {
  const parts = new Map<string, Set<string>>([[BASE_PART, new Set(['package.json', 'node_modules', 'deploy/clickhouse/migrations'])]]);
  for (const bundle of bundleEntries(root)) {
    if (bundle.buildOnly) continue;
    const dir = dirname(bundle.outfile);
    const part = serviceOf(bundle.outfile) ?? BASE_PART;
    const entries = parts.get(part) ?? new Set<string>();
    parts.set(part, entries);
    entries.add(dir);
    // A workspace's bundle resolves the workspace's own nested node_modules first.
    if (basename(dir) === 'dist' && dirname(dir) !== '.') {
      const workspace = dirname(dir);
      entries.add(`${workspace}/package.json`);
      if (existsSync(join(root, workspace, 'node_modules'))) entries.add(`${workspace}/node_modules`);
    }
  }
  return new Map([...parts].map(([k, v]) => [k, [...v].sort()]));
}

/** Copies each part's paths into `dest/<part>`, keeping symlinks as they are (npm's workspace links). */
export function stage(root: string, dest: string): string[] {
  const skip = join(root, dirname(STAGE_BUNDLE));
  const staged: string[] = [];
  for (const [part, entries] of imageParts(root)) {
    for (const entry of entries) {
      const from = join(root, entry);
      if (!existsSync(from)) throw new Error(`image entry ${entry} is missing: run the build first`);
      mkdirSync(dirname(join(dest, part, entry)), { recursive: true });
      cpSync(from, join(dest, part, entry), { recursive: true, verbatimSymlinks: true, filter: (src) => src !== skip && !src.startsWith(skip + sep) });
      staged.push(`${part}/${entry}`);
    }
  }
  return staged;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dest = process.argv[2] ?? STAGE_DIR;
  // The bundle lives in <root>/dist/build/, the source in <root>/scripts/image/: both two levels down.
  const root = join(dirname(process.argv[1]), '..', '..');
  console.log(`staged into ${dest}: ${stage(root, dest).join(', ')}`);
}

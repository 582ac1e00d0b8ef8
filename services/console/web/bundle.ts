/**
 * The dashboard web app (services/console/web) built by vite into services/console/dist/web,
 * and the size of what the first page load downloads: every script index.html references,
 * gzipped. Used by scripts/build.ts, scripts/start.sh (when the build is missing) and tests.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

/** services/console, the folder above this file. */
const consoleDir = new URL('..', import.meta.url).pathname;
export const WEB_SOURCE_DIR = join(consoleDir, 'web');
export const WEB_DIST_DIR = join(consoleDir, 'dist/web');
/** Budget for the first load's JavaScript, gzipped (issue 6). */
export const FIRST_LOAD_JS_BUDGET = 200 * 1024;

export async function buildWeb(): Promise<void> {
  const { build } = await import('vite');
  await build({ configFile: join(WEB_SOURCE_DIR, 'vite.config.ts'), logLevel: 'warn' });
}

/**
 * Builds the web app when the build is missing or older than any of its sources (the app's
 * files and the schemas it imports types and rules from): a build left by an earlier checkout
 * would otherwise serve old pages to the browser tests.
 */
export async function ensureWebBuilt(): Promise<void> {
  const built = join(WEB_DIST_DIR, 'index.html');
  if (!existsSync(built) || statSync(built).mtimeMs < newestSourceMtimeMs()) await buildWeb();
}

function newestSourceMtimeMs(): number {
  const sources = [WEB_SOURCE_DIR, join(consoleDir, '../../schemas/src')];
  let newest = 0;
  for (const dir of sources) {
    for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
      if (entry.isFile()) newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}

export function firstLoadJsGzipBytes(distDir = WEB_DIST_DIR): { files: string[]; bytes: number } {
  const html = readFileSync(join(distDir, 'index.html'), 'utf8');
  // Entry scripts and the module preloads vite adds for their static imports.
  const files = [...html.matchAll(/(?:src|href)="\/dashboard\/(assets\/[^"]+\.js)"/g)].map((m) => m[1] ?? '');
  const bytes = files.reduce((sum, f) => sum + gzipSync(readFileSync(join(distDir, f))).length, 0);
  return { files, bytes };
}

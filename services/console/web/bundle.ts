/**
 * The dashboard web app (services/console/web) built by vite into services/console/dist/web,
 * and the size of what the first page load downloads: every script index.html references,
 * gzipped. Used by scripts/build.ts, scripts/start.sh (when the build is missing) and tests.
 */
import { existsSync, readFileSync } from 'node:fs';
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

export async function ensureWebBuilt(): Promise<void> {
  if (!existsSync(join(WEB_DIST_DIR, 'index.html'))) await buildWeb();
}

export function firstLoadJsGzipBytes(distDir = WEB_DIST_DIR): { files: string[]; bytes: number } {
  const html = readFileSync(join(distDir, 'index.html'), 'utf8');
  // Entry scripts and the module preloads vite adds for their static imports.
  const files = [...html.matchAll(/(?:src|href)="\/dashboard\/(assets\/[^"]+\.js)"/g)].map((m) => m[1] ?? '');
  const bytes = files.reduce((sum, f) => sum + gzipSync(readFileSync(join(distDir, f))).length, 0);
  return { files, bytes };
}

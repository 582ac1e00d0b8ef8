import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * Where the built web app is: next to the production bundle (services/console/dist/main.js ->
 * dist/web) or, running from sources with tsx, services/console/dist/web.
 */
export function defaultWebDir(): string {
  const candidates = [new URL('./web/', import.meta.url), new URL('../../dist/web/', import.meta.url)].map((u) => fileURLToPath(u));
  return candidates.find((dir) => existsSync(`${dir}index.html`)) ?? candidates[candidates.length - 1] ?? '';
}

/**
 * Production build: the esbuild bundles (scripts/image/bundles.ts: each service's main.ts, and
 * the operator command `ingest` in dist/ingest.mjs), then the dashboard's web app.
 */
import { buildBundles } from './image/build-bundles.js';
import { bundleEntries, externalPackages } from './image/bundles.js';
import { buildWeb, FIRST_LOAD_JS_BUDGET, firstLoadJsGzipBytes } from '@ingest/console/build/web-bundle';

await buildBundles();
console.log(
  `built ${bundleEntries()
    .map((b) => `${b.name} -> ${b.outfile}`)
    .join(', ')} (external: ${externalPackages().length} packages)`,
);

await buildWeb();
const web = firstLoadJsGzipBytes();
console.log(
  `built dashboard web app -> services/console/dist/web (first load: ${(web.bytes / 1024).toFixed(1)} KiB of JavaScript gzipped, budget ${FIRST_LOAD_JS_BUDGET / 1024} KiB)`,
);
if (web.bytes > FIRST_LOAD_JS_BUDGET) {
  console.error('the dashboard first load is over its JavaScript budget');
  process.exit(1);
}

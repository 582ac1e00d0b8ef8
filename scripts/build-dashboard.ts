/** Builds only the dashboard web app (scripts/start.sh runs it when the build is missing). */
import { buildWeb, FIRST_LOAD_JS_BUDGET, firstLoadJsGzipBytes } from '@ingest/console/build/web-bundle';

await buildWeb();
const { bytes } = firstLoadJsGzipBytes();
console.log(`built the dashboard web app: first load ${(bytes / 1024).toFixed(1)} KiB of JavaScript gzipped (budget ${FIRST_LOAD_JS_BUDGET / 1024} KiB)`);

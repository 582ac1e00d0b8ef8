/**
 * The process of `ingest` (the image's /usr/local/bin/ingest, bundled by `npm run build` into
 * dist/ingest.mjs) and of `npm run ingest|admin|deadletters|credentials-key|setup` in a checkout:
 * the terminal and the environment handed to runIngest, its answer as the exit code.
 */
import { runIngest } from './ingest.js';

process.setSourceMapsEnabled(true);
process.exitCode = await runIngest(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});

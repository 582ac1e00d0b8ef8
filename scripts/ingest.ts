/**
 * `ingest`: the operator command of the app image (`ingest admin …`, `ingest deadletters …`,
 * `ingest setup`, `ingest healthcheck`); `npm run ingest -- …` in a checkout. Bundled by
 * `npm run build` into dist/ingest.mjs.
 */
import { runIngest } from './ingest/commands.js';

process.setSourceMapsEnabled(true);
process.exitCode = await runIngest(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});

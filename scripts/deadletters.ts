/**
 * Dead-letter CLI entry: `npm run deadletters -- help`. Reads KAFKA_BROKERS and
 * KAFKA_TOPIC_PREFIX from the environment; everything else lives in scripts/deadletters/cli.ts.
 */
import { runCli } from './deadletters/cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});

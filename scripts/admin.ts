/**
 * Admin CLI entry: `npm run admin -- help`. Reads ADMIN_URL and ADMIN_TOKEN from the
 * environment; everything else lives in scripts/admin/cli.ts.
 */
import { runCli } from './admin/cli.js';

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  fetch: globalThis.fetch,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});

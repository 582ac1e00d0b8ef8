import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.js';
import { waitFor } from './wait.js';

/**
 * A Redis server of the test's own (`redis-server`, which scripts/stack.sh installs), for tests
 * that stop Redis: the shared one keeps running for every other test. No persistence; its
 * files live in a temporary directory removed by `close`.
 */
export interface OwnRedis {
  url: string;
  /** SIGKILL, as a crash; resolves once the port refuses connections. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty: nothing was persisted). */
  start(): Promise<void>;
  close(): Promise<void>;
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write('PING\r\n'));
    socket.setTimeout(1_000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.once('error', () => resolve(false));
  });
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'own-redis-'));
  let child: ChildProcess | undefined;
  const killOnExit = () => child?.kill('SIGKILL');
  process.once('exit', killOnExit);

  async function start(): Promise<void> {
    const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
    child = proc;
    let failed: Error | undefined;
    proc.once('error', (err) => (failed = err));
    await waitFor(
      async () => {
        if (failed) throw new Error(`redis-server could not start (is it installed? scripts/stack.sh installs it): ${failed.message}`);
        return answersPing(port);
      },
      { description: `own redis-server on :${port}`, timeoutMs: 15_000, intervalMs: 100 },
    );
  }

  async function stop(): Promise<void> {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGKILL');
    await exited;
  }

  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    stop,
    start,
    async close() {
      await stop();
      process.removeListener('exit', killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

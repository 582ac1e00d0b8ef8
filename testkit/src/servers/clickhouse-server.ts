/**
 * Stops and restarts the local stack's ClickHouse for the outage test. Only a server that
 * scripts/stack.sh started (its pid file, a clickhouse-server command line) is ever signalled;
 * restarting goes through `stack.sh up`, which starts only what is down.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { integrationEnv, waitFor } from '../index.js';
import { resultsDir, stackDir } from '../processes/service-process.js';

/** Where scripts/stack.sh records the server it started. */
const pidFile = () => join(stackDir(), 'clickhouse', 'clickhouse.pid');

/** Alive and not a zombie (as scripts/stack.sh checks it). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

export async function clickhouseAnswers(): Promise<boolean> {
  try {
    const res = await fetch(`${integrationEnv().clickhouseUrl}/?query=SELECT%201`, { signal: AbortSignal.timeout(2_000) });
    return res.ok && (await res.text()).trim() === '1';
  } catch {
    return false;
  }
}

/** The pid of the stack's ClickHouse; throws (naming why) when it is not ours to stop. */
export function stackClickHousePid(): number {
  const file = pidFile();
  if (!existsSync(file)) {
    throw new Error(`no ${file}: the ClickHouse on ${integrationEnv().clickhouseUrl} was not started by scripts/stack.sh, so this test may not stop it`);
  }
  const pid = Number(readFileSync(file, 'utf8').trim());
  const cmdline = Number.isInteger(pid) && alive(pid) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
  if (!cmdline.includes('clickhouse-server')) throw new Error(`pid ${pid} from ${file} is not a running clickhouse-server`);
  return pid;
}

/** SIGTERM to the stack's ClickHouse, then waits until it has exited. */
export async function stopClickHouse(): Promise<void> {
  const pid = stackClickHousePid();
  process.kill(pid, 'SIGTERM');
  await waitFor(() => !alive(pid), { description: `clickhouse-server pid ${pid} to exit after SIGTERM`, timeoutMs: 60_000, intervalMs: 100 });
  if (await clickhouseAnswers()) throw new Error('ClickHouse still answers after its server exited: another server is on the port');
}

/** `bash scripts/stack.sh up` (restarts only what is down), then waits until ClickHouse answers. */
export async function startClickHouse(): Promise<void> {
  mkdirSync(resultsDir(), { recursive: true });
  const logFile = join(resultsDir(), 'chaos-stack-up.log');
  const fd = openSync(logFile, 'a');
  try {
    // Own process group: a Ctrl-C of the test run must not reach the server it starts.
    const child = spawn('bash', ['scripts/stack.sh', 'up'], { cwd: REPO_ROOT, stdio: ['ignore', fd, fd], detached: true });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`scripts/stack.sh up exited with ${code}; see ${logFile}`);
  } finally {
    closeSync(fd);
  }
  await waitFor(clickhouseAnswers, { description: 'ClickHouse answering after stack.sh up', timeoutMs: 60_000 });
}

/** For afterAll: whatever happened, leave a running ClickHouse behind. */
export async function ensureClickHouseUp(): Promise<void> {
  if (!(await clickhouseAnswers())) await startClickHouse();
}

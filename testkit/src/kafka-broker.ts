import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@ingest/platform';
import { integrationEnv } from './env.js';
import { stackDir } from './processes/service-process.js';
import { waitFor } from './wait.js';

/**
 * Stops, starts, pauses and resumes the local stack's own Kafka broker (scripts/stack.sh, its
 * pid file under STACK_DIR). Only chaos tests use this: they run alone, so taking the shared
 * broker away is allowed there. A broker that stack.sh did not start is never signalled.
 */

function brokerPort(): number {
  const brokers = integrationEnv().kafkaBrokers;
  return Number(brokers.split(',')[0]?.split(':').at(-1) ?? 9092);
}

function portOpen(): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host: '127.0.0.1', port: brokerPort() }, () => {
      socket.destroy();
      done(true);
    });
    socket.on('error', () => done(false));
  });
}

/** The pid of the stack's broker; throws (naming why) when it is not ours to signal. */
export function stackKafkaPid(): number {
  const file = join(stackDir(), 'kafka', 'kafka.pid');
  if (!existsSync(file))
    throw new Error(`no ${file}: the broker on ${integrationEnv().kafkaBrokers} was not started by scripts/stack.sh, so this test may not touch it`);
  const pid = Number(readFileSync(file, 'utf8').trim());
  const cmdline = existsSync(`/proc/${pid}/cmdline`) ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
  if (!cmdline.includes('java')) throw new Error(`pid ${pid} of ${file} is not a running Kafka broker`);
  return pid;
}

/** Alive and not a zombie. */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** SIGTERM, then waits until the process is gone: a broker still shutting down holds its data directory's lock. */
export async function stopKafka(): Promise<void> {
  const pid = stackKafkaPid();
  process.kill(pid, 'SIGTERM');
  await waitFor(async () => (!running(pid) && !(await portOpen())) || undefined, { description: `Kafka (pid ${pid}) to exit`, timeoutMs: 60_000 });
}

/**
 * `bash scripts/stack.sh up`. No clock of its own around it: one started here would also run
 * through a jar fetch or an apt install that `up` may have to do first; stack.sh bounds each of
 * those and the broker's start (from its spawn) itself, and fails with a line that says which.
 */
export async function startKafka(): Promise<void> {
  // The broker stackKafkaPid signals: the single one, whatever a caller exported for a cluster or
  // the secure broker (npm run test:scale exports STACK_KAFKA_NODES=3, and its kafkajs chaos step
  // then restarted the cluster instead).
  const { STACK_KAFKA_SECURITY: _secure, ...env } = process.env;
  await promisify(execFile)('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), 'up'], { env: { ...env, STACK_KAFKA_NODES: '1' } });
}

/**
 * For afterEach/afterAll ("whatever happened, leave the broker running"): `startKafka` only when
 * the stack's broker is not running. A running one is left alone: `stack.sh up` would only
 * check it, with a JVM of its own (4 to 16 s per call on a busy 2-core machine).
 */
export async function ensureKafkaUp(): Promise<void> {
  await resumeKafka();
  let running: boolean;
  try {
    stackKafkaPid();
    running = await portOpen();
  } catch {
    running = false;
  }
  if (!running) await startKafka();
}

let paused: number | undefined;
// A test that dies while the broker is stopped must not leave it frozen for everything after it.
const resumeOnExit = () => {
  if (paused !== undefined) process.kill(paused, 'SIGCONT');
};

/**
 * SIGSTOP: the broker keeps its connections but answers nothing, as in a long GC pause, a
 * frozen VM or a network partition (not a refused connection, which is what stopKafka gives).
 */
export function pauseKafka(): void {
  const pid = stackKafkaPid();
  process.kill(pid, 'SIGSTOP');
  paused = pid;
  process.once('exit', resumeOnExit);
}

/** SIGCONT, and waits until the broker accepts connections again. */
export async function resumeKafka(): Promise<void> {
  if (paused === undefined) return;
  process.kill(paused, 'SIGCONT');
  paused = undefined;
  process.removeListener('exit', resumeOnExit);
  await waitFor(() => portOpen(), { description: 'Kafka to answer after SIGCONT', timeoutMs: 30_000 });
}

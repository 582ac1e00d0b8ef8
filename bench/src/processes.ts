/**
 * Child processes of the bench (gateway, processor, no-op server, the Kafka producer tool).
 * Each runs in its own process group (detached) so a Ctrl-C reaches only the bench, which then
 * stops them in order; each is stopped by its own pid, never by name.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { isAlive } from './proc-stats.js';

export interface Child {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Exit code (or signal name) once the process has ended. */
  readonly exited: Promise<number | string>;
  running(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`. Resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

export interface SpawnOptions {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string | undefined>;
  cwd: string;
  logFile: string;
  /** Called for every stdout line (also written to the log). */
  onLine?: (line: string) => void;
}

export function spawnChild(options: SpawnOptions): Child {
  const log: WriteStream = createWriteStream(options.logFile, { flags: 'a' });
  const child = spawn(options.command, options.args, {
    cwd: options.cwd,
    env: options.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not start ${options.name} (${options.command})`);
  const pid = child.pid;
  child.stderr.pipe(log, { end: false });
  if (options.onLine) {
    const lines = createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      log.write(`${line}\n`);
      options.onLine?.(line);
    });
  } else {
    child.stdout.pipe(log, { end: false });
  }
  let done = false;
  const exited = new Promise<number | string>((resolve) => {
    child.once('error', (err) => {
      done = true;
      log.write(`\n[bench] spawn error: ${err.message}\n`);
      resolve(`error: ${err.message}`);
    });
    child.once('exit', (code, signal) => {
      done = true;
      resolve(code ?? signal ?? 'unknown');
    });
  }).finally(() => new Promise<void>((r) => log.end(r)));

  return {
    name: options.name,
    pid,
    logFile: options.logFile,
    exited,
    running: () => !done,
    async stop(graceMs = 20_000) {
      if (done) return;
      signal(pid, 'SIGTERM');
      const timer = setTimeout(() => signal(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** Stops a pid this bench started in an earlier run that died (see leftovers.ts). */
export async function stopPid(pid: number, graceMs = 10_000): Promise<void> {
  signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(200);
  if (isAlive(pid)) signal(pid, 'SIGKILL');
}

export function sleep(ms: number, abort?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (abort?.aborted) return resolve();
    // A deadline already passed (a late schedule on a loaded machine) is a wait of 0, not a warning.
    const timer = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(timer);
      abort?.removeEventListener('abort', done);
      resolve();
    }
    abort?.addEventListener('abort', done, { once: true });
  });
}

/** Polls `url` until it answers 200; fails early when the child exits. */
export async function waitUntilReady(child: Child, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!child.running()) throw new Error(`${child.name} exited (${await child.exited}) before it was ready; see ${child.logFile}`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(2_000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${child.name} was not ready at ${url} within ${timeoutMs} ms; see ${child.logFile}`);
    await sleep(250);
  }
}

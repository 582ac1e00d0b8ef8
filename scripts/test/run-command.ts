/**
 * Commands as a user runs them, for tests of the scripts themselves: a child in its own process
 * group (so a command that hangs is stopped with everything it started), its output captured.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';

export interface CommandResult {
  /** Exit status; null when it was killed (at its deadline). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `command args` in the repository; at `timeoutMs` its process group gets `killSignal`
 * (default SIGKILL; SIGTERM lets a script's trap stop what it runs in groups of their own) and
 * the result says so in stderr.
 */
export function run(
  command: string,
  args: readonly string[],
  options: { env: NodeJS.ProcessEnv; timeoutMs: number; killSignal?: NodeJS.Signals },
): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: REPO_ROOT, env: options.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${options.timeoutMs} ms]`;
      killGroup(child.pid, options.killSignal ?? 'SIGKILL');
    }, options.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Pids recorded in `*.pid` files of `dir` (scripts/start.sh's run directory) that are still alive. */
export function livePids(dir: string): number[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.pid'));
  } catch {
    return [];
  }
  return files.map((f) => Number(readFileSync(join(dir, f), 'utf8').trim())).filter((pid) => Number.isInteger(pid) && pid > 0 && alive(pid));
}

/** Last resort after a failed stop: SIGKILL to the process group of every pid still recorded in `dir` (start.sh starts each service with setsid). */
export function stopProcessGroups(dir: string): void {
  for (const pid of livePids(dir)) killGroup(pid, 'SIGKILL');
}

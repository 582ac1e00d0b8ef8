/**
 * A service as a real OS process (`node --import tsx services/<name>/src/main.ts`), so chaos
 * tests can kill one with SIGKILL mid-batch (no stop() runs, nothing is flushed or committed,
 * exactly as when a pod is OOM-killed) and see it as an orchestrator does: its /healthz and
 * /readyz, its /metrics, its RSS, whether it exited. Each process logs to a file under
 * `<STACK_DIR>/test-results/` for debugging. The one harness for every service.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { TEST_SEEN_IDS_KEY } from '../env.js';
import { metricSum } from '../metrics-text.js';
import { assertProjectNode } from '../node-runtime.js';
import { waitFor } from '../wait.js';

export type ServiceName = 'gateway' | 'console' | 'processor' | 'crm-sink';

/** scripts/stack.sh's STACK_DIR (default .local): server state and test results live there. */
export function stackDir(): string {
  return resolve(REPO_ROOT, process.env.STACK_DIR ?? '.local');
}

export function resultsDir(): string {
  return join(stackDir(), 'test-results');
}

export interface ServiceProcess {
  readonly service: ServiceName;
  readonly name: string;
  readonly pid: number;
  /** Its ops listener (/healthz, /readyz, /metrics). */
  readonly opsUrl: string;
  readonly logFile: string;
  /** Exit code, or the signal name, once the process has exited. */
  readonly exited: Promise<number | string>;
  /** The same, synchronously; undefined while it runs. */
  exitStatus(): number | string | undefined;
  /** Sends SIGKILL at once (synchronous, so it can be called from an HTTP 'finish' callback). */
  killNow(): void;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful shutdown), then waits for the exit; resolves the exit code (SIGKILL after `graceMs`, default 30 s). */
  stop(graceMs?: number): Promise<number | string>;
  /** The Prometheus text of its /metrics. */
  metrics(): Promise<string>;
  /** Status of its /healthz (liveness) and /readyz, and what /readyz says it waits for when not ready. */
  health(): Promise<{ live: number; ready: number; waitingFor?: string[]; degraded?: string[] }>;
  /** Resident set size now, from /proc (bytes). */
  rssBytes(): number;
  /** The last lines of its log, for failure messages. */
  logTail(lines?: number): string;
}

export interface ServiceProcessOptions {
  service: ServiceName;
  /** Log files are named `chaos-<name>.log`. */
  name: string;
  opsPort: number;
  /** Everything the service reads (nothing of vitest's environment leaks into it but PATH). */
  env: Record<string, string>;
  /** Called as soon as it is spawned, so a test that fails while it starts still kills it. */
  track?: (p: ServiceProcess) => void;
  /** `tsx` runs the sources (default); `dist` the production bundle (`npm run build`), as the image does. */
  entry?: 'tsx' | 'dist';
  /** The checkout it runs from (default this one; the rolling-upgrade test runs the previous release's worktree). */
  root?: string;
  /** Node flags before the entry (e.g. --cpu-prof, the image's --max-semi-space-size). */
  nodeArgs?: string[];
  /** Where it logs; default `<STACK_DIR>/test-results/chaos-<name>.log`. */
  logFile?: string;
  /** In a process group of its own, so a Ctrl-C of the caller does not reach it (the benchmark stops it in order). */
  detached?: boolean;
  /** How long it may take to be ready (default 60 s). */
  readyTimeoutMs?: number;
  /** SIGKILL it if this process exits while it still runs (a test that failed to stop it, a worker that ends). */
  killWithParent?: boolean;
}

/** Spawns the service and waits until its /readyz answers 200; kills it if it never does. */
export async function startServiceProcess(options: ServiceProcessOptions): Promise<ServiceProcess> {
  const { service, name } = options;
  const logFile = options.logFile ?? join(resultsDir(), `chaos-${name}.log`);
  mkdirSync(dirname(logFile), { recursive: true });
  const fd = openSync(logFile, 'w');
  const entry =
    options.entry === 'dist' ? ['--enable-source-maps', `services/${service}/dist/main.js`] : ['--import', 'tsx', `services/${service}/src/main.ts`];
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, [...(options.nodeArgs ?? []), ...entry], {
      cwd: options.root ?? REPO_ROOT,
      stdio: ['ignore', fd, fd],
      env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'warn', SEEN_IDS_HMAC_KEY: TEST_SEEN_IDS_KEY, ...options.env },
      detached: options.detached ?? false,
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not spawn ${service} ${name}`);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  let exitCode: number | string | undefined;
  void exited.then((c) => (exitCode = c));
  if (options.killWithParent) {
    const killOnExit = () => exitCode === undefined && child.kill('SIGKILL');
    process.once('exit', killOnExit);
    void exited.then(() => process.removeListener('exit', killOnExit));
  }
  const opsUrl = `http://127.0.0.1:${options.opsPort}`;
  /** A refused connection says why when the process is gone: a crash reads as one, not as a network error. */
  const unreachable = (err: unknown): never => {
    if (exitCode !== undefined) throw new Error(`${service} ${name} exited with ${exitCode}; log tail:\n${proc.logTail(8)}`, { cause: err });
    throw err;
  };
  const proc: ServiceProcess = {
    service,
    name,
    pid,
    opsUrl,
    logFile,
    exited,
    exitStatus: () => exitCode,
    killNow() {
      if (exitCode === undefined) child.kill('SIGKILL');
    },
    async kill() {
      proc.killNow();
      await exited;
    },
    async stop(graceMs = 30_000) {
      if (exitCode === undefined) child.kill('SIGTERM');
      // Its own hard deadline (SHUTDOWN_TIMEOUT_MS, 15 s) should end it well before the default.
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('hung after SIGTERM'), graceMs)));
      const result = await Promise.race([exited, hung]).finally(() => clearTimeout(timer));
      if (result === 'hung after SIGTERM') {
        child.kill('SIGKILL');
        await exited;
      }
      return result;
    },
    async metrics() {
      const res = await fetch(`${opsUrl}/metrics`, { signal: AbortSignal.timeout(5_000) }).catch(unreachable);
      if (res.status !== 200) throw new Error(`${opsUrl}/metrics answered ${res.status}`);
      return res.text();
    },
    async health() {
      const [live, ready] = await Promise.all(
        ['/healthz', '/readyz'].map((p) => fetch(`${opsUrl}${p}`, { signal: AbortSignal.timeout(5_000) }).catch(unreachable)),
      );
      const body = ready ? ((await ready.json().catch(() => ({}))) as { waitingFor?: string[]; degraded?: string[] }) : {};
      return {
        live: live?.status ?? 0,
        ready: ready?.status ?? 0,
        ...(body.waitingFor ? { waitingFor: body.waitingFor } : {}),
        ...(body.degraded ? { degraded: body.degraded } : {}),
      };
    },
    rssBytes() {
      const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      return Number(kb ?? 0) * 1024;
    },
    logTail(lines = 20) {
      return readFileSync(logFile, 'utf8').split('\n').slice(-lines).join('\n');
    },
  };
  options.track?.(proc);

  await waitFor(
    async () => {
      if (exitCode !== undefined) throw new Error(`${service} ${name} exited with ${exitCode} before it was ready; log tail:\n${proc.logTail()}`);
      const res = await fetch(`${opsUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
      return res.status === 200;
    },
    { description: `${service} ${name} ready on ${opsUrl}/readyz`, timeoutMs: options.readyTimeoutMs ?? 60_000, intervalMs: 250 },
  ).catch(async (err: unknown) => {
    await proc.kill();
    throw err;
  });
  // What runs in the tests is what ships: the project's Node major (node-runtime.ts).
  try {
    assertProjectNode(`${service} ${name}`, await proc.metrics());
  } catch (err) {
    await proc.kill();
    throw err;
  }
  return proc;
}

/**
 * Processes of one test: remembers them, tells deliberate exits from crashes, and kills whatever
 * still runs when the test ends (and when the vitest worker exits, so none consumes in the
 * background after a crash).
 */
export class ServiceFleet {
  private readonly all: ServiceProcess[] = [];
  private readonly deliberate = new Set<string>();
  /** The last /metrics of each process, read right before it was killed or stopped. */
  private readonly lastMetrics = new Map<string, string>();
  private readonly killOnExit = () => {
    // Only live ones: the pid of one that exited may belong to another process by now.
    for (const p of this.all) if (p.exitStatus() === undefined) p.killNow();
  };

  constructor(
    private readonly spawnOne: (name: string, track: (p: ServiceProcess) => void) => Promise<ServiceProcess>,
    private readonly label: string,
  ) {
    process.once('exit', this.killOnExit);
  }

  /** Spawns one and waits until its /readyz answers 200. */
  start(): Promise<ServiceProcess> {
    return this.spawnOne(`${this.label}-${this.all.length + 1}`, (p) => this.all.push(p));
  }

  /** SIGKILL; `scrapeFirst: false` when even the few milliseconds of reading /metrics matter. */
  async kill(p: ServiceProcess, { scrapeFirst = true } = {}): Promise<void> {
    this.deliberate.add(p.name);
    if (scrapeFirst) await this.scrape(p);
    await p.kill();
  }

  /** Marks the process as killed on purpose, then SIGKILL now (synchronously). */
  killNow(p: ServiceProcess): void {
    this.deliberate.add(p.name);
    p.killNow();
  }

  async stop(p: ServiceProcess): Promise<number | string> {
    this.deliberate.add(p.name);
    await this.scrape(p);
    return p.stop();
  }

  /**
   * A counter summed over every process of the fleet: the running ones now, the others as
   * last read before they were killed (what a process counted in its last milliseconds is
   * missing, so this is a close lower bound).
   */
  async counterTotal(name: string): Promise<number> {
    for (const p of this.all) if (p.exitStatus() === undefined) await this.scrape(p);
    return [...this.lastMetrics.values()].reduce((sum, text) => sum + metricSum(text, name), 0);
  }

  private async scrape(p: ServiceProcess): Promise<void> {
    const text = await p.metrics().catch(() => undefined);
    if (text !== undefined) this.lastMetrics.set(p.name, text);
  }

  /** Processes that exited without being killed or stopped by the test (should be none). */
  unexpectedExits(): string[] {
    return this.all
      .filter((p) => !this.deliberate.has(p.name) && p.exitStatus() !== undefined)
      .map((p) => `${p.name} exited with ${p.exitStatus()} (log: ${p.logFile})`);
  }

  /** SIGKILL to every process still running; for afterEach/afterAll. */
  async killAll(): Promise<void> {
    for (const p of this.all) this.deliberate.add(p.name);
    await Promise.all(this.all.map((p) => p.kill()));
    process.removeListener('exit', this.killOnExit);
  }
}

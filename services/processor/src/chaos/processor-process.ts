/**
 * The processor as real OS processes (`node --import tsx src/main.ts`), so chaos tests can kill
 * one with SIGKILL mid-batch: no stop() runs, nothing is flushed or committed, exactly as when
 * a pod is OOM-killed. Each process logs to a file under .local/test-results/ for debugging.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { METRIC_NAMES, REPO_ROOT } from '@ingest/platform';
import { freePort, integrationEnv, uniqueSuffix, waitFor } from '@ingest/testkit';

/** scripts/stack.sh's STACK_DIR (default .local): server state and .local/test-results live there. */
export function stackDir(): string {
  return resolve(REPO_ROOT, process.env.STACK_DIR ?? '.local');
}

export function resultsDir(): string {
  return join(stackDir(), 'test-results');
}

/** What every processor of one test shares: topics, database and consumer groups. */
export interface ProcessorSetup {
  topicPrefix: string;
  database: string;
  groups: { storage: string; dedupe: string; jobs: string };
  /** Log files are named `chaos-<label>-<n>.log`. */
  label: string;
  /** Further settings of every process (session timeout, liveness bounds, stages, buffer caps, ...). */
  env?: Record<string, string>;
}

export interface ProcessorProcess {
  readonly name: string;
  readonly pid: number;
  readonly opsUrl: string;
  readonly logFile: string;
  /** Exit code, or the signal name, once the process has exited. */
  readonly exited: Promise<number | string>;
  /** The same, synchronously; undefined while it runs. */
  exitStatus(): number | string | undefined;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful shutdown), then waits for the exit; resolves the exit code (SIGKILL after 30 s). */
  stop(): Promise<number | string>;
  /** The Prometheus text of its /metrics. */
  metrics(): Promise<string>;
  /** Status of its /healthz (liveness) and /readyz. */
  health(): Promise<{ live: number; ready: number }>;
}

export function processorSetup(topicPrefix: string, database: string, label: string, env: Record<string, string> = {}): ProcessorSetup {
  const suffix = uniqueSuffix();
  return { topicPrefix, database, label, env, groups: { storage: `storage-${suffix}`, dedupe: `dedupe-${suffix}`, jobs: `jobs-${suffix}` } };
}

/** Starts processes, remembers them, and kills whatever is still running at the end of a test. */
export class ProcessorFleet {
  private readonly all: ProcessorProcess[] = [];
  private readonly deliberate = new Set<string>();
  /** The last /metrics of each process, read right before it was killed or stopped. */
  private readonly lastMetrics = new Map<string, string>();
  private readonly killOnExit = () => {
    // Only live ones: the pid of one that exited may belong to another process by now.
    for (const p of this.all) if (p.exitStatus() === undefined) this.signal(p.pid, 'SIGKILL');
  };

  constructor(private readonly setup: ProcessorSetup) {
    // A crashed vitest worker must not leave processors consuming in the background.
    process.once('exit', this.killOnExit);
  }

  /** Spawns one and waits until its /readyz answers 200 (its consumers have joined their groups). */
  async start(): Promise<ProcessorProcess> {
    // Tracked from the spawn on, so a test that fails while one is starting still kills it.
    return startProcessor(this.setup, `${this.setup.label}-${this.all.length + 1}`, (p) => this.all.push(p));
  }

  /** SIGKILL; `scrapeFirst: false` when even the few milliseconds of reading /metrics matter. */
  async kill(p: ProcessorProcess, { scrapeFirst = true } = {}): Promise<void> {
    this.deliberate.add(p.name);
    if (scrapeFirst) await this.scrape(p);
    await p.kill();
  }

  async stop(p: ProcessorProcess): Promise<number | string> {
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

  private async scrape(p: ProcessorProcess): Promise<void> {
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
    await Promise.all(this.all.map((p) => p.kill()));
    process.removeListener('exit', this.killOnExit);
  }

  private signal(pid: number, signal: NodeJS.Signals): void {
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

async function startProcessor(setup: ProcessorSetup, name: string, track: (p: ProcessorProcess) => void): Promise<ProcessorProcess> {
  const env = integrationEnv();
  const port = await freePort();
  mkdirSync(resultsDir(), { recursive: true });
  const logFile = join(resultsDir(), `chaos-${name}.log`);
  const fd = openSync(logFile, 'w');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, ['--import', 'tsx', 'services/processor/src/main.ts'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', fd, fd],
      // Only what the processor needs: nothing of vitest's environment leaks into it.
      env: {
        PATH: process.env.PATH ?? '',
        LOG_LEVEL: 'warn',
        KAFKA_BROKERS: env.kafkaBrokers,
        KAFKA_DRIVER: env.kafkaDriver,
        CLICKHOUSE_URL: env.clickhouseUrl,
        REDIS_URL: env.redisUrl,
        KAFKA_TOPIC_PREFIX: setup.topicPrefix,
        KAFKA_CLIENT_ID: `chaos-${name}`,
        CLICKHOUSE_DATABASE: setup.database,
        // Empty on purpose: the gateway fixture's job status store and allowance use no prefix,
        // and GET /v1/jobs must see what the job runner writes. Keys are per job and account id,
        // both unique, and the usage reconciler (the one part that scans keys) is off.
        REDIS_KEY_PREFIX: '',
        PROCESSOR_STORAGE_GROUP: setup.groups.storage,
        PROCESSOR_DEDUPE_GROUP: setup.groups.dedupe,
        PROCESSOR_JOBS_GROUP: setup.groups.jobs,
        PROCESSOR_OPS_HOST: '127.0.0.1',
        PROCESSOR_OPS_PORT: String(port),
        USAGE_RECONCILE_INTERVAL_MS: '0',
        ...setup.env,
      },
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not spawn processor ${name}`);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  let exitCode: number | string | undefined;
  void exited.then((c) => (exitCode = c));
  const opsUrl = `http://127.0.0.1:${port}`;
  const tail = () => readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n');
  const processor: ProcessorProcess = {
    name,
    pid,
    opsUrl,
    logFile,
    exited,
    exitStatus: () => exitCode,
    async kill() {
      if (exitCode === undefined) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (exitCode === undefined) child.kill('SIGTERM');
      // Its own hard deadline (SHUTDOWN_TIMEOUT_MS, 15 s) should end it well before this.
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('hung after SIGTERM'), 30_000)));
      const result = await Promise.race([exited, hung]).finally(() => clearTimeout(timer));
      if (result === 'hung after SIGTERM') {
        child.kill('SIGKILL');
        await exited;
      }
      return result;
    },
    async health() {
      const [live, ready] = await Promise.all(['/healthz', '/readyz'].map((p) => fetch(`${opsUrl}${p}`, { signal: AbortSignal.timeout(5_000) })));
      return { live: live?.status ?? 0, ready: ready?.status ?? 0 };
    },
    async metrics() {
      const res = await fetch(`${opsUrl}/metrics`, { signal: AbortSignal.timeout(5_000) });
      if (res.status !== 200) throw new Error(`${opsUrl}/metrics answered ${res.status}`);
      return res.text();
    },
  };
  track(processor);

  await waitFor(
    async () => {
      if (exitCode !== undefined) throw new Error(`processor ${name} exited with ${exitCode} before it was ready; log tail:\n${tail()}`);
      const res = await fetch(`${opsUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
      return res.status === 200;
    },
    { description: `processor ${name} ready on ${opsUrl}/readyz`, timeoutMs: 60_000, intervalMs: 250 },
  ).catch(async (err: unknown) => {
    await processor.kill();
    throw err;
  });
  return processor;
}

/** Sum of all samples of a metric in Prometheus text. */
export function metricSum(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/** Consumer lag per group from a processor's /metrics; a group without samples is absent. */
export function lagByGroup(text: string): Map<string, number> {
  const lag = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${METRIC_NAMES.consumerLag}{`)) continue;
    const group = /group="([^"]*)"/.exec(line)?.[1];
    if (group === undefined) continue;
    lag.set(group, (lag.get(group) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return lag;
}

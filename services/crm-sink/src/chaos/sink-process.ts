/**
 * The crm-sink as real OS processes (`node --import tsx src/main.ts`, as the processor's chaos
 * tests run theirs), so a chaos test can kill one with SIGKILL mid-flush: no stop() runs,
 * nothing is committed or marked, exactly as when a pod is OOM-killed. Each process logs to a
 * file under .local/test-results/ for debugging.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { freePort, integrationEnv, waitFor } from '@ingest/testkit';
import { resultsDir } from '../../../processor/src/chaos/processor-process.js';

/** What every sink process of one run shares: its topics, Redis keys and consumer group. */
export interface SinkSetup {
  topicPrefix: string;
  redisKeyPrefix: string;
  groupId: string;
  /** Log files are named `chaos-<label>-<n>.log`. */
  label: string;
  /** Further CRM_* variables (coalescing window, rate, retries). */
  env: Record<string, string>;
}

export interface SinkProcess {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Exit code, or the signal name, once the process has exited. */
  readonly exited: Promise<number | string>;
  exitStatus(): number | string | undefined;
  /** Sends SIGKILL at once (synchronous, so it can be called from an HTTP 'finish' callback). */
  killNow(): void;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** Status of its /healthz (liveness) and /readyz. */
  health(): Promise<{ live: number; ready: number }>;
}

/** Starts sink processes of one setup, remembers them, and kills whatever still runs at the end. */
export class SinkFleet {
  private readonly all: SinkProcess[] = [];
  private readonly deliberate = new Set<string>();
  private readonly killOnExit = () => {
    // Only live ones: the pid of one that exited may belong to another process by now.
    for (const p of this.all) if (p.exitStatus() === undefined) p.killNow();
  };

  constructor(private readonly setup: SinkSetup) {
    // A crashed vitest worker must not leave sinks consuming in the background.
    process.once('exit', this.killOnExit);
  }

  /** Spawns one and waits until its /readyz answers 200 (control plane read, consumer running). */
  start(): Promise<SinkProcess> {
    return startSink(this.setup, `${this.setup.label}-${this.all.length + 1}`, (p) => this.all.push(p));
  }

  /** Marks the process as killed on purpose, then SIGKILL now (synchronously). */
  killNow(p: SinkProcess): void {
    this.deliberate.add(p.name);
    p.killNow();
  }

  /** Processes that exited without being killed by the test (should be none). */
  unexpectedExits(): string[] {
    return this.all
      .filter((p) => !this.deliberate.has(p.name) && p.exitStatus() !== undefined)
      .map((p) => `${p.name} exited with ${p.exitStatus()} (log: ${p.logFile})`);
  }

  /** SIGKILL to every process still running; for afterAll. */
  async killAll(): Promise<void> {
    for (const p of this.all) this.deliberate.add(p.name);
    await Promise.all(this.all.map((p) => p.kill()));
    process.removeListener('exit', this.killOnExit);
  }
}

async function startSink(setup: SinkSetup, name: string, track: (p: SinkProcess) => void): Promise<SinkProcess> {
  const env = integrationEnv();
  const port = await freePort();
  mkdirSync(resultsDir(), { recursive: true });
  const logFile = join(resultsDir(), `chaos-${name}.log`);
  const fd = openSync(logFile, 'w');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, ['--import', 'tsx', 'services/crm-sink/src/main.ts'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', fd, fd],
      // Only what the sink needs: nothing of vitest's environment leaks into it.
      env: {
        PATH: process.env.PATH ?? '',
        LOG_LEVEL: 'warn',
        KAFKA_BROKERS: env.kafkaBrokers,
        KAFKA_DRIVER: env.kafkaDriver,
        REDIS_URL: env.redisUrl,
        KAFKA_TOPIC_PREFIX: setup.topicPrefix,
        KAFKA_CLIENT_ID: `chaos-${name}`,
        REDIS_KEY_PREFIX: setup.redisKeyPrefix,
        CRM_SINK_GROUP: setup.groupId,
        CRM_SINK_OPS_HOST: '127.0.0.1',
        CRM_SINK_OPS_PORT: String(port),
        // The fake CRM is plain http on loopback, which the outbound address policy refuses by default.
        CRM_ALLOW_HTTP: 'true',
        CRM_ALLOWED_CIDRS: '127.0.0.1/32',
        ...setup.env,
      },
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not spawn crm-sink ${name}`);
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  let exitCode: number | string | undefined;
  void exited.then((c) => (exitCode = c));
  const opsUrl = `http://127.0.0.1:${port}`;
  const tail = () => readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n');
  const sink: SinkProcess = {
    name,
    pid,
    logFile,
    exited,
    exitStatus: () => exitCode,
    killNow() {
      if (exitCode === undefined) child.kill('SIGKILL');
    },
    async kill() {
      sink.killNow();
      await exited;
    },
    async health() {
      const [live, ready] = await Promise.all(['/healthz', '/readyz'].map((p) => fetch(`${opsUrl}${p}`, { signal: AbortSignal.timeout(5_000) })));
      return { live: live?.status ?? 0, ready: ready?.status ?? 0 };
    },
  };
  track(sink);

  await waitFor(
    async () => {
      if (exitCode !== undefined) throw new Error(`crm-sink ${name} exited with ${exitCode} before it was ready; log tail:\n${tail()}`);
      const res = await fetch(`${opsUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
      return res.status === 200;
    },
    { description: `crm-sink ${name} ready on ${opsUrl}/readyz`, timeoutMs: 60_000, intervalMs: 250 },
  ).catch(async (err: unknown) => {
    await sink.kill();
    throw err;
  });
  return sink;
}

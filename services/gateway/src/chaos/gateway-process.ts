/**
 * The gateway as a real OS process (`node --import tsx src/main.ts`), for chaos tests that must
 * see the whole service as an orchestrator does: its HTTP API, its /healthz and /readyz, its
 * RSS, and whether it exited. Logs go to a file under .local/test-results/.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { freePort, integrationEnv, waitFor } from '@ingest/testkit';
import { resultsDir } from '../../../processor/src/chaos/processor-process.js';

export interface GatewayProcess {
  readonly name: string;
  readonly pid: number;
  readonly url: string;
  readonly opsUrl: string;
  readonly logFile: string;
  exitStatus(): number | string | undefined;
  /** Resident set size now, from /proc (bytes). */
  rssBytes(): number;
  kill(): Promise<void>;
}

/** `env` adds to (or overrides) what every gateway of a test needs: servers, topics, database. */
export async function startGatewayProcess(name: string, env: Record<string, string>): Promise<GatewayProcess> {
  const servers = integrationEnv();
  const [port, opsPort] = [await freePort(), await freePort()];
  mkdirSync(resultsDir(), { recursive: true });
  const logFile = join(resultsDir(), `chaos-${name}.log`);
  const fd = openSync(logFile, 'w');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, ['--import', 'tsx', 'services/gateway/src/main.ts'], {
      cwd: REPO_ROOT,
      stdio: ['ignore', fd, fd],
      env: {
        PATH: process.env.PATH ?? '',
        LOG_LEVEL: 'warn',
        KAFKA_BROKERS: servers.kafkaBrokers,
        KAFKA_DRIVER: servers.kafkaDriver,
        CLICKHOUSE_URL: servers.clickhouseUrl,
        REDIS_URL: servers.redisUrl,
        KAFKA_CLIENT_ID: `chaos-${name}`,
        GATEWAY_HOST: '127.0.0.1',
        GATEWAY_PORT: String(port),
        GATEWAY_OPS_HOST: '127.0.0.1',
        GATEWAY_OPS_PORT: String(opsPort),
        ...env,
      },
    });
  } finally {
    closeSync(fd);
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not spawn gateway ${name}`);
  let exitCode: number | string | undefined;
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));
  void exited.then((c) => (exitCode = c));
  const killOnExit = () => {
    if (exitCode === undefined) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const gateway: GatewayProcess = {
    name,
    pid,
    url: `http://127.0.0.1:${port}`,
    opsUrl: `http://127.0.0.1:${opsPort}`,
    logFile,
    exitStatus: () => exitCode,
    rssBytes() {
      const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      return Number(kb ?? 0) * 1024;
    },
    async kill() {
      process.removeListener('exit', killOnExit);
      if (exitCode === undefined) child.kill('SIGKILL');
      await exited;
    },
  };
  const tail = () => readFileSync(logFile, 'utf8').split('\n').slice(-20).join('\n');
  await waitFor(
    async () => {
      if (exitCode !== undefined) throw new Error(`gateway ${name} exited with ${exitCode} before it was ready; log tail:\n${tail()}`);
      const res = await fetch(`${gateway.opsUrl}/readyz`, { signal: AbortSignal.timeout(2_000) });
      return res.status === 200;
    },
    { description: `gateway ${name} ready on ${gateway.opsUrl}/readyz`, timeoutMs: 60_000, intervalMs: 250 },
  ).catch(async (err: unknown) => {
    await gateway.kill();
    throw err;
  });
  return gateway;
}

/**
 * Gateways behind a real load balancer (docs/scale.md, "Gateways behind a load balancer"):
 * HAProxy from Debian running the example a user deploys, `deploy/haproxy/haproxy.cfg`, unchanged
 * (every address in it is an environment variable), in front of three gateways as real OS
 * processes on free loopback ports, each with its own ops port whose /readyz HAProxy checks.
 * `haproxy` is installed by scripts/haproxy/install.sh when it is not on PATH.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { freePort } from '../ports.js';
import { waitFor } from '../wait.js';
import { type GatewayProcess, startGatewayProcess } from './gateway-process.js';
import { resultsDir } from './service-process.js';

/** The configuration users run (and this harness runs as is). */
export const HAPROXY_CONFIG = 'deploy/haproxy/haproxy.cfg';
/** Its `server` lines: the gateways, in order. */
const SERVERS = ['gw1', 'gw2', 'gw3'] as const;
const BACKEND = 'gateways';
/** Debian puts haproxy in /usr/sbin, which a non-login PATH may lack. */
const SEARCH_PATH = `${process.env.PATH ?? ''}:/usr/sbin:/sbin`;

/** The haproxy binary, installed from Debian (scripts/haproxy/install.sh) the first time. */
export function ensureHaproxy(): string {
  const find = () => spawnSync('sh', ['-c', 'command -v haproxy'], { env: { PATH: SEARCH_PATH }, encoding: 'utf8' }).stdout.trim();
  const found = find();
  if (found) return found;
  const install = spawnSync('bash', ['scripts/haproxy/install.sh'], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 15 * 60_000 });
  const installed = find();
  if (!installed) throw new Error(`haproxy is not installed and scripts/haproxy/install.sh failed (${install.status}): ${install.stdout}${install.stderr}`);
  return installed;
}

/** A server's state in HAProxy's stats: `UP`, `DOWN`, `UP 1/2` (going down), `DOWN 1/2` (coming up), `MAINT`... */
export type ServerStates = Record<(typeof SERVERS)[number], string>;

export interface LoadBalancedGateways {
  /** Where clients send: HAProxy's frontend. */
  readonly url: string;
  /** HAProxy's stats page (`/stats;csv`) and Prometheus metrics (`/metrics`). */
  readonly statsUrl: string;
  /** gw1, gw2, gw3 in the configuration's order. */
  readonly gateways: readonly GatewayProcess[];
  readonly haproxyLog: string;
  /** Each gateway's state as HAProxy sees it now. */
  serverStates(): Promise<ServerStates>;
  /**
   * Per gateway: requests HAProxy sent it so far (`stot`), answers 5xx from it or by HAProxy for it
   * (`hrsp_5xx`), and requests it holds now (`scur`: idle kept-alive connections do not count).
   */
  serverCounters(): Promise<Record<(typeof SERVERS)[number], { requests: number; http5xx: number; active: number }>>;
  /** HAProxy's own log (server state changes). */
  haproxyLogTail(lines?: number): string;
  /** Stops HAProxy and kills every gateway still running. */
  stop(): Promise<void>;
}

export interface LoadBalancedGatewaysOptions {
  /** Every gateway's settings besides the servers' (topics, database, limits, REDIS_KEY_PREFIX...). */
  env: Record<string, string>;
  /** Log files: `chaos-<label>-gwN.log`, `<label>-haproxy.log`. */
  label: string;
}

/**
 * Starts three gateways (GATEWAY_TRUST_PROXY=1, as the manifests run them behind one proxy hop),
 * then HAProxy in front of them, and waits until HAProxy has every gateway in rotation. A failure
 * while starting stops whatever had started.
 */
export async function startLoadBalancedGateways(options: LoadBalancedGatewaysOptions): Promise<LoadBalancedGateways> {
  const haproxyBin = ensureHaproxy();
  const started = await Promise.allSettled(
    // Three tsx start-ups at once on a busy 2-core machine: up to 2 minutes (one alone takes a few seconds).
    SERVERS.map((server) => startGatewayProcess(`${options.label}-${server}`, { GATEWAY_TRUST_PROXY: '1', ...options.env }, { readyTimeoutMs: 120_000 })),
  );
  const gateways = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await Promise.all(gateways.map((g) => g.kill()));
    throw failed.reason;
  }
  const [port, statsPort] = [await freePort(), await freePort()];
  const env: Record<string, string> = {
    PATH: SEARCH_PATH,
    HAPROXY_BIND: `127.0.0.1:${port}`,
    HAPROXY_STATS_BIND: `127.0.0.1:${statsPort}`,
  };
  gateways.forEach((g, i) => {
    env[`GATEWAY_${i + 1}`] = new URL(g.url).host;
    env[`GATEWAY_${i + 1}_OPS_PORT`] = new URL(g.opsUrl).port;
  });
  const haproxyLog = join(resultsDir(), `${options.label}-haproxy.log`);
  mkdirSync(resultsDir(), { recursive: true });
  const fd = openSync(haproxyLog, 'w');
  let child: ChildProcess;
  try {
    // -db: in the foreground, one process (its threads), so SIGTERM/SIGKILL of this pid ends it.
    child = spawn(haproxyBin, ['-db', '-f', HAPROXY_CONFIG], { cwd: REPO_ROOT, env, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  let exit: number | string | undefined;
  const exited = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exit = code ?? signal ?? 'unknown';
      resolve();
    }),
  );
  const killOnExit = () => exit === undefined && child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const statsUrl = `http://127.0.0.1:${statsPort}`;
  const stats = async () => {
    const res = await fetch(`${statsUrl}/stats;csv`, { signal: AbortSignal.timeout(2_000) });
    return parseStatsCsv(await res.text()).filter((row) => row.pxname === BACKEND && (SERVERS as readonly string[]).includes(row.svname ?? ''));
  };
  const haproxyLogTail = (lines = 20) => readFileSync(haproxyLog, 'utf8').split('\n').slice(-lines).join('\n');
  const lb: LoadBalancedGateways = {
    url: `http://127.0.0.1:${port}`,
    statsUrl,
    gateways,
    haproxyLog,
    async serverStates() {
      return Object.fromEntries((await stats()).map((row) => [row.svname, row.status ?? '?'])) as ServerStates;
    },
    async serverCounters() {
      return Object.fromEntries(
        (await stats()).map((row) => [row.svname, { requests: Number(row.stot), http5xx: Number(row.hrsp_5xx), active: Number(row.scur) }]),
      ) as Awaited<ReturnType<LoadBalancedGateways['serverCounters']>>;
    },
    haproxyLogTail,
    async stop() {
      if (exit === undefined) child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
      if (exit === undefined) {
        child.kill('SIGKILL');
        await exited;
      }
      process.removeListener('exit', killOnExit);
      await Promise.all(gateways.map((g) => g.kill()));
    },
  };
  try {
    // A configuration HAProxy refuses ends the start at once, with HAProxy's reason.
    const refused = exited.then(() => {
      throw new Error(`haproxy exited with ${exit} at start: ${haproxyLogTail()}`);
    });
    refused.catch(() => {}); // when stopped later, its exit is no error
    await Promise.race([
      refused,
      waitFor(
        async () => {
          const states = await lb.serverStates();
          if (SERVERS.every((s) => states[s] === 'UP')) return true;
          throw new Error(`HAProxy's view of the gateways: ${JSON.stringify(states)}`);
        },
        { description: 'HAProxy up with every gateway in rotation', timeoutMs: 20_000, intervalMs: 250 },
      ),
    ]);
  } catch (err) {
    await lb.stop();
    throw err;
  }
  return lb;
}

/** HAProxy's `/stats;csv`: a `# pxname,svname,…` header line, then one row per proxy and server. */
export function parseStatsCsv(text: string): Record<string, string>[] {
  const [header, ...rows] = text.split('\n').filter((l) => l.trim() !== '');
  const names = (header ?? '').replace(/^#\s*/, '').split(',');
  return rows.map((row) => {
    const cells = row.split(',');
    return Object.fromEntries(names.map((n, i) => [n, cells[i] ?? '']));
  });
}

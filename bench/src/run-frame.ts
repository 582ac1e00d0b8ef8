/**
 * The frame every pipeline bench run shares (`npm run bench` and `npm run bench:tenants`): the
 * options, the run's own names and clients, the result skeleton, the abort signal, removing what
 * earlier runs left, the run state file and its teardown, provisioning, the servers' pids, starting
 * the three services, the observer and the report written at the end, also on failure and Ctrl-C.
 * The profiles keep their own notes, phases and figures.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createClickHouse, createKafkaClient, createLogger, createRedis, REPO_ROOT, topicName } from '@ingest/platform';
import { freePort } from '@ingest/testkit';
import { type Cleanup, createCleanup } from './cleanup.js';
import { type BenchAccount, type BenchNames, benchNames, provision, redisInfo, type ServerAddresses, serviceEnv, teardown } from './environment.js';
import type { BodyFactory } from './events.js';
import { type PipelineFigures, pipelineFigures } from './figures.js';
import { runFreshness } from './freshness.js';
import type { HttpClient } from './http-client.js';
import type { RequestSource } from './load.js';
import { liveRuns, removeLeftovers, type RunStateFile, writeRunState } from './leftovers.js';
import { createLagReader, type Observer } from './observe.js';
import { type BenchOptions, loadBenchOptions, usage } from './options.js';
import { pidFromFile } from './proc-stats.js';
import { type BenchResult, formatReport, writeResult } from './report.js';
import { compareWithRecorded, figuresOf, type RecordedRuns } from './regression-guard.js';
import { n0, say } from './say.js';
import { runSearch } from './search.js';
import { runSoak } from './soak.js';
import { ensureBundles, type StartedService, startService } from './services.js';
import { runSustained } from './sustained.js';

/** The parsed options; prints the usage and exits on --help (0) or a bad flag (2). */
export function optionsOrExit(o: { check?: (parsed: BenchOptions) => void; usage?: () => string } = {}): BenchOptions {
  try {
    const parsed = loadBenchOptions(process.argv.slice(2), process.env);
    if (parsed) {
      o.check?.(parsed);
      return parsed;
    }
    console.log((o.usage ?? usage)());
    process.exit(0);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${usage()}`);
    process.exit(2);
  }
}

export type ServicePorts = { gateway: number; gatewayOps: number; console: number; consoleOps: number; processorOps: number; admin: number };

export interface RunFrame {
  options: BenchOptions;
  root: string;
  stackDir: string;
  logDir: string;
  cleanup: Cleanup;
  logger: ReturnType<typeof createLogger>;
  names: BenchNames;
  servers: ServerAddresses;
  kafka: ReturnType<typeof createKafkaClient>;
  redis: ReturnType<typeof createRedis>;
  cores: number;
  result: BenchResult;
  /** Aborted by a service that died during the run. */
  failure: AbortController;
  /** Aborted by Ctrl-C (cleanup.signal) or by `failure`. */
  runSignal: AbortSignal;
  /** Set once the services are being stopped on purpose: their exit is then no failure. */
  stopping: boolean;
  resultFile: string;
  benchDir: string;
  /** Names the result file and the recorded runs it is compared with (bench/recorded/<profile>.json). */
  profile: string;
}

/** `profile` names the log folder and the result file (`<profile>-<timestamp>`). */
export function createRunFrame(profile: string, options: BenchOptions, start: { setup: Record<string, string>; notes: string[] }): RunFrame {
  const root = REPO_ROOT.replace(/\/$/, '');
  const stackDir = resolve(root, options.STACK_DIR);
  const stamp = new Date()
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  const benchDir = join(stackDir, 'bench');
  const cleanup = createCleanup();
  // kafkajs logs transient metadata errors while topics are created; real failures throw.
  const logger = createLogger({ service: 'bench', level: 'fatal' });
  const names = benchNames();
  const cores = availableParallelism();
  const failure = new AbortController();
  const runSignal = AbortSignal.any([cleanup.signal, failure.signal]);
  // Phases wait on it from several loops at once.
  setMaxListeners(0, runSignal);
  return {
    options,
    root,
    stackDir,
    benchDir,
    profile,
    logDir: join(benchDir, `${profile}-${stamp}`),
    resultFile: join(benchDir, `${profile}-${stamp}.json`),
    cleanup,
    logger,
    names,
    servers: { clickhouseUrl: options.CLICKHOUSE_URL, clickhouseUser: options.CLICKHOUSE_USER, clickhousePassword: options.CLICKHOUSE_PASSWORD },
    kafka: createKafkaClient({ brokers: options.KAFKA_BROKERS, clientId: names.clientId, logger }),
    redis: createRedis({ url: options.REDIS_URL }),
    cores,
    result: {
      startedAt: new Date().toISOString(),
      commit: describeCommit(root),
      machine: { cores, node: process.version, loadAverage: loadavg() },
      setup: start.setup,
      notes: start.notes,
      baselines: {},
      ratios: {},
      targets: [],
      errors: [],
    },
    failure,
    runSignal,
    stopping: false,
  };
}

export interface PreparedRun {
  state: RunStateFile;
  ch: ReturnType<typeof createClickHouse>;
  serverPids: Record<'kafka' | 'clickhouse' | 'redis', number | undefined>;
  /** What runs the services, for the setup table. */
  bundles: string;
}

/**
 * Removes what killed runs left, records this run so a later one can remove it, provisions its
 * topics and database and registers their removal. `teardownBoundMs` bounds that removal (the
 * cleanup's default when absent).
 */
export async function prepareRun(f: RunFrame, o: { teardownBoundMs?: number } = {}): Promise<PreparedRun> {
  const { names, kafka, redis, servers, cleanup, result } = f;
  mkdirSync(f.logDir, { recursive: true });
  await redis.connect();
  cleanup.add('close redis', () => redis.close());
  const runsDir = join(f.benchDir, 'running');
  await removeLeftovers(runsDir, kafka, redis, servers);
  const others = liveRuns(runsDir);
  if (others.length > 0) result.notes.push(`another bench run is running at the same time (pid ${others.join(', ')}): the figures disturb each other`);
  const state = writeRunState(runsDir, names.runId, names);
  cleanup.add(
    'remove the run',
    async () => {
      const problems = await teardown(names, kafka, redis, servers);
      for (const p of problems) say('cleanup', `could not remove ${p} (the next run retries)`);
      if (problems.length === 0) state.remove();
      say(
        'cleanup',
        problems.length === 0 ? `removed topics ${names.topicPrefix}*, database ${names.database}, Redis keys ${names.redisPrefix}*` : 'cleanup incomplete',
      );
    },
    o.teardownBoundMs,
  );

  const bundles = f.options.BENCH_SERVICES === 'dist' ? ensureBundles(f.root, f.options.BENCH_BUILD) : 'TypeScript sources through tsx';
  say('setup', `topics under ${names.topicPrefix} (production partition counts), database ${names.database}`);
  await provision(names, kafka, servers, f.logger);
  const ch = createClickHouse({ url: servers.clickhouseUrl, username: servers.clickhouseUser, password: servers.clickhousePassword, database: names.database });
  cleanup.add('close clickhouse client', () => ch.close());
  const serverPids = {
    kafka: pidFromFile(join(f.stackDir, 'kafka', 'kafka.pid'), 'kafka.Kafka'),
    clickhouse: pidFromFile(join(f.stackDir, 'clickhouse', 'clickhouse.pid'), 'clickhouse'),
    redis: pidFromFile(join(f.stackDir, 'redis', 'redis.pid'), 'redis-server'),
  };
  const missing = Object.entries(serverPids).filter(([, pid]) => pid === undefined);
  if (missing.length > 0) result.notes.push(`no pid for ${missing.map(([n]) => n).join(', ')} under ${f.stackDir}: their CPU is not measured`);
  return { state, ch, serverPids, bundles };
}

/** Free ports for the services, an admin token and the environment they all run with. */
export async function serviceSetup(f: RunFrame): Promise<{ ports: ServicePorts; adminToken: string; env: Record<string, string | undefined> }> {
  const ports = {
    gateway: await freePort(),
    gatewayOps: await freePort(),
    console: await freePort(),
    consoleOps: await freePort(),
    processorOps: await freePort(),
    admin: await freePort(),
  };
  const adminToken = randomBytes(24).toString('hex');
  const env = serviceEnv(f.names, f.servers, { kafkaBrokers: f.options.KAFKA_BROKERS, redisUrl: f.options.REDIS_URL, adminToken, ports });
  return { ports, adminToken, env };
}

export interface RunServices {
  processor: StartedService;
  gateway: StartedService;
  consoleService: StartedService;
}

/**
 * Starts processor, gateway and console, records what runs in the setup table, and fails the run
 * when one of them exits before `f.stopping` is set. `nodeArgs` adds node flags per service.
 */
export async function startRunServices(
  f: RunFrame,
  o: { env: Record<string, string | undefined>; ports: ServicePorts; state: RunStateFile; nodeArgs?: (name: 'processor' | 'gateway') => string[] },
): Promise<RunServices> {
  const { result } = f;
  const common = {
    source: f.options.BENCH_SERVICES,
    root: f.root,
    env: o.env,
    logDir: f.logDir,
    cleanup: f.cleanup,
    onSpawn: (pid: number) => o.state.addChild(pid),
  };
  const extra = (name: 'processor' | 'gateway') => (o.nodeArgs ? { nodeArgs: o.nodeArgs(name) } : {});
  // The console only answers the account creations (its admin API); it is not measured.
  const [processor, gateway, consoleService] = await Promise.all([
    startService({ ...common, name: 'processor', opsPort: o.ports.processorOps, ...extra('processor') }),
    startService({ ...common, name: 'gateway', opsPort: o.ports.gatewayOps, ...extra('gateway') }),
    startService({ ...common, name: 'console', opsPort: o.ports.consoleOps }),
  ]);
  for (const s of [gateway, processor, consoleService]) {
    result.setup[s.child.name] =
      `${s.source === 'dist' ? `services/${s.child.name}/dist/main.js` : `services/${s.child.name}/src/main.ts (tsx)`}, pid ${s.child.pid}`;
    if (s.note) result.notes.push(s.note);
  }
  for (const child of [processor.child, gateway.child, consoleService.child]) {
    void child.exited.then((code) => {
      if (!f.runSignal.aborted && !f.stopping) f.failure.abort(new Error(`${child.name} exited with ${code} during the run; see ${child.logFile}`));
    });
  }
  return { processor, gateway, consoleService };
}

/** The readings every phase takes: consumer lag, Redis memory, rows landed, the processes' CPU. */
export function createRunObserver(
  f: RunFrame,
  o: { ch: ReturnType<typeof createClickHouse>; services: RunServices; serverPids: PreparedRun['serverPids']; countRows: () => Promise<number> },
): Observer {
  const { names, redis } = f;
  const lag = createLagReader(f.kafka, f.logger, {
    dedupe: { groupId: names.groups.dedupe, topic: topicName(names.topicPrefix, 'eventsRaw') },
    storage: { groupId: names.groups.storage, topic: topicName(names.topicPrefix, 'eventsUnique') },
  });
  f.cleanup.add('close lag reader', () => lag.close());
  const { gateway, processor } = o.services;
  return {
    lag,
    redisUsedMemory: async () => (await redisInfo(redis, 'memory'))('used_memory'),
    ch: o.ch,
    countRows: o.countRows,
    gatewayOpsUrl: gateway.opsUrl,
    processorOpsUrl: processor.opsUrl,
    pids: { gateway: gateway.child.pid, processor: processor.child.pid, ...o.serverPids },
    groupPrefix: names.groupPrefix,
  };
}

/** What every phase loads the gateway with and reads the pipeline through. */
export interface PhaseLoad {
  observer: Observer;
  client: HttpClient;
  source: RequestSource;
}

/** The unpaced phase (the gateway's accept capacity); its figures become `result.pipeline`. */
export async function runUnpacedPhase(f: RunFrame, l: PhaseLoad) {
  const { options } = f;
  const readings = await runSustained({
    ...l,
    concurrency: options.BENCH_CONCURRENCY,
    warmupS: options.BENCH_WARMUP_S,
    windowS: options.BENCH_DURATION_S,
    drainTimeoutS: options.BENCH_DRAIN_TIMEOUT_S,
    progressS: options.BENCH_PROGRESS_S,
    signal: f.runSignal,
  });
  const figures = pipelineFigures(readings, f.cores, f.names.groupPrefix);
  f.result.pipeline = figures;
  return { readings, figures };
}

/**
 * The lag-flat search after the unpaced phase; its result becomes `result.search`. Undefined when
 * --search-steps is 0, or when the unpaced backlog did not drain (said in `result.searchSkipped`).
 */
export async function runSearchPhase(f: RunFrame, l: PhaseLoad, figures: PipelineFigures, o: { judgeOnAnswered?: boolean } = {}) {
  const { options, result } = f;
  if (options.BENCH_SEARCH_STEPS <= 0) return undefined;
  if (!figures.drain.drained) {
    result.searchSkipped = `${n0(figures.drain.remaining)} events of the unpaced phase were still on their way after ${options.BENCH_DRAIN_TIMEOUT_S} s`;
    say('search', `not run: ${result.searchSkipped}`);
    return undefined;
  }
  const searched = await runSearch({
    ...l,
    concurrency: options.BENCH_CONCURRENCY,
    unpacedEndToEnd: figures.endToEnd.eventsPerSec,
    acceptCapacity: figures.acceptedEventsPerSec,
    settleS: options.BENCH_SEARCH_SETTLE_S,
    windowS: options.BENCH_SEARCH_WINDOW_S,
    maxSteps: options.BENCH_SEARCH_STEPS,
    drainTimeoutS: options.BENCH_DRAIN_TIMEOUT_S,
    signal: f.runSignal,
    ...o,
  });
  result.search = searched.search;
  return searched;
}

/** The freshness phase at `eventsPerSecond`, its probes sent with the `probes` account's key. */
export function runFreshnessPhase(
  f: RunFrame,
  l: PhaseLoad,
  o: { probeClient: HttpClient; ch: ReturnType<typeof createClickHouse>; probes: BenchAccount; bodies: BodyFactory; eventsPerSecond: number },
) {
  const { options } = f;
  return runFreshness({
    ...l,
    probeClient: o.probeClient,
    ch: o.ch,
    probeApiKey: o.probes.apiKey,
    probeAccountId: o.probes.accountId,
    runId: f.names.runId,
    bodies: o.bodies,
    concurrency: options.BENCH_CONCURRENCY,
    eventsPerSecond: o.eventsPerSecond,
    durationS: options.BENCH_FRESHNESS_DURATION_S,
    probeIntervalMs: options.BENCH_PROBE_INTERVAL_MS,
    pollMs: options.BENCH_PROBE_POLL_MS,
    progressS: options.BENCH_PROGRESS_S,
    signal: f.runSignal,
  });
}

/** The soak at `eventsPerSecond` (soak.ts): memory over a long paced run, the seen ids of `accountId` told apart. */
export function runSoakPhase(f: RunFrame, l: PhaseLoad, o: { accountId: string; eventsPerSecond: number }) {
  const { options } = f;
  return runSoak({
    ...l,
    redis: f.redis,
    redisPrefix: f.names.redisPrefix,
    accountId: o.accountId,
    concurrency: options.BENCH_CONCURRENCY,
    eventsPerSecond: o.eventsPerSecond,
    durationS: options.BENCH_SOAK_DURATION_S,
    intervalS: options.BENCH_SOAK_INTERVAL_S,
    signal: f.runSignal,
  });
}

/**
 * Runs `main`, writes the result and the report (also after a failure or Ctrl-C), removes what
 * the run created and exits: 0, 1 on a failure, 130 when interrupted. `beforeReport` completes
 * the result first.
 */
export async function runToEnd(f: RunFrame, main: () => Promise<void>, beforeReport?: (result: BenchResult) => void): Promise<never> {
  const { cleanup, failure, result } = f;
  let exitCode = 0;
  try {
    await main();
  } catch (err) {
    f.stopping = true;
    if (cleanup.signal.aborted) {
      result.errors.push('interrupted: the figures above are incomplete');
      exitCode = 130;
    } else {
      const cause = failure.signal.aborted ? (failure.signal.reason as Error) : (err as Error);
      result.errors.push(cause.stack ?? String(cause));
      exitCode = 1;
    }
  } finally {
    f.stopping = true;
    result.finishedAt = new Date().toISOString();
    beforeReport?.(result);
    compareWithRecordedRuns(f);
    try {
      writeResult(f.resultFile, result);
      console.log(`${formatReport(result)}\n\nresult: ${f.resultFile}`);
    } catch (err) {
      say('report', `could not write the result: ${(err as Error).message}`);
    }
    say('cleanup', 'stopping services and removing what the run created');
    await cleanup.run();
  }
  process.exit(exitCode);
}

/** `git describe` of the tree measured (the tag, commits past it, `-dirty`): the recorded runs name it. */
function describeCommit(root: string): string {
  try {
    return execFileSync('git', ['describe', '--tags', '--always', '--dirty'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

/** The regression guard (regression-guard.ts): this run's figures against the recorded runs of its profile. */
function compareWithRecordedRuns(f: RunFrame): void {
  const file = join(f.root, 'bench', 'recorded', `${f.profile}.json`);
  if (!existsSync(file)) {
    f.result.notes.push(`no recorded runs to compare with (${file}; npm run bench:record writes it)`);
    return;
  }
  try {
    const recorded = JSON.parse(readFileSync(file, 'utf8')) as RecordedRuns;
    f.result.regression = { recorded, lines: compareWithRecorded(figuresOf(f.result), recorded) };
  } catch (err) {
    f.result.notes.push(`could not compare with ${file}: ${(err as Error).message}`);
  }
}

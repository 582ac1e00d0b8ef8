/**
 * `npm run bench`: the whole pipeline (real gateway and processor processes, local Kafka,
 * ClickHouse and Redis) next to raw baselines measured in the same run. See options.ts for the
 * flags. Progress goes to stderr, the report to stdout, the full result to
 * .local/bench/pipeline-<timestamp>.json. Everything the run creates is removed at the end,
 * also on failure and Ctrl-C (and by the next run if this one is killed outright).
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdirSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createClickHouse, createKafkaClient, createLogger, createRedis, REPO_ROOT, TOPICS, topicName } from '@ingest/platform';
import { runAllowancePhase } from './allowance-phase.js';
import { runBaselines } from './baseline-phase.js';
import { createCleanup } from './cleanup.js';
import { freePort } from '@ingest/testkit';
import { benchNames, countRows, createAccount, provision, serviceEnv, startAllowanceReset, teardown } from './environment.js';
import { createBodyFactory } from './events.js';
import { pipelineFigures } from './figures.js';
import { runFreshness } from './freshness.js';
import { createHttpClient } from './http-client.js';
import { singleAccountSource } from './load.js';
import { liveRuns, removeLeftovers, type RunStateFile, writeRunState } from './leftovers.js';
import { judgeMemory, memoryFigures } from './memory.js';
import { createLagReader, type Observation, type Observer } from './observe.js';
import { type BenchOptions, loadBenchOptions, usage } from './options.js';
import { pidFromFile } from './proc-stats.js';
import { cpuProfileArgs, summarizeProfile } from './profile.js';
import { type BenchResult, formatReport, ratiosAndTargets, writeResult } from './report.js';
import { ensureBundles, startService, summarizeLog } from './services.js';
import { n0, n1, say } from './say.js';
import { runSearch } from './search.js';
import { runSustained } from './sustained.js';
import { runWriterPhase, skipToEnd } from './writer-phase.js';

function optionsOrExit(): BenchOptions {
  try {
    const parsed = loadBenchOptions(process.argv.slice(2), process.env);
    if (parsed) return parsed;
    console.log(usage());
    process.exit(0);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${usage()}`);
    process.exit(2);
  }
}

const options = optionsOrExit();
/** services/processor/src/config.ts: DEDUPE_MAX_MARKS_PER_PARTITION's default. */
const PROCESSOR_DEFAULT_MAX_MARKS = 2_000_000;

const root = REPO_ROOT.replace(/\/$/, '');
const stackDir = resolve(root, options.STACK_DIR);
const stamp = new Date()
  .toISOString()
  .replace(/[-:]/g, '')
  .replace(/\.\d+Z$/, 'Z');
const benchDir = join(stackDir, 'bench');
const logDir = join(benchDir, `pipeline-${stamp}`);
const resultFile = join(benchDir, `pipeline-${stamp}.json`);
const cleanup = createCleanup();
// kafkajs logs transient metadata errors while topics are created; real failures throw.
const logger = createLogger({ service: 'bench', level: 'fatal' });
const names = benchNames();
const servers = { clickhouseUrl: options.CLICKHOUSE_URL, clickhouseUser: options.CLICKHOUSE_USER, clickhousePassword: options.CLICKHOUSE_PASSWORD };
const kafka = createKafkaClient({ brokers: options.KAFKA_BROKERS, clientId: names.clientId, logger });
const redis = createRedis({ url: options.REDIS_URL });
const cores = availableParallelism();
const bodies = createBodyFactory(names.runId, options.BENCH_EVENT_BYTES);

const result: BenchResult = {
  startedAt: new Date().toISOString(),
  machine: { cores, node: process.version, loadAverage: loadavg() },
  setup: {},
  notes: [
    'RATE_LIMIT_PER_MINUTE is 1,000,000,000: the per-address rate limit is not what is measured (its Redis call on every request still is)',
    "the growth plan's per-account ceilings are 1,000,000,000 requests and events a second: not what is measured (their one Redis call per request still is)",
    'the allowance counters are set back to 0 every second (growth plan: 500,000 a month); the allowance script on every request is still measured',
  ],
  baselines: {},
  ratios: {},
  targets: [],
  errors: [],
};

/** Aborted by Ctrl-C (cleanup.signal) or by a service that died during the run. */
const failure = new AbortController();
const runSignal = AbortSignal.any([cleanup.signal, failure.signal]);
// Phases wait on it from several loops at once.
setMaxListeners(0, runSignal);
let stopping = false;

async function main(): Promise<void> {
  mkdirSync(logDir, { recursive: true });
  await redis.connect();
  cleanup.add('close redis', () => redis.close());
  const runsDir = join(benchDir, 'running');
  await removeLeftovers(runsDir, kafka, redis, servers);
  const others = liveRuns(runsDir);
  if (others.length > 0) result.notes.push(`another bench run is running at the same time (pid ${others.join(', ')}): the figures disturb each other`);
  const state = writeRunState(runsDir, names.runId, names);
  cleanup.add('remove the run', async () => {
    const problems = await teardown(names, kafka, redis, servers);
    for (const p of problems) say('cleanup', `could not remove ${p} (the next run retries)`);
    if (problems.length === 0) state.remove();
    say(
      'cleanup',
      problems.length === 0 ? `removed topics ${names.topicPrefix}*, database ${names.database}, Redis keys ${names.redisPrefix}*` : 'cleanup incomplete',
    );
  });

  const bundles = options.BENCH_SERVICES === 'dist' ? ensureBundles(root, options.BENCH_BUILD) : 'TypeScript sources through tsx';
  say('setup', `topics under ${names.topicPrefix} (production partition counts), database ${names.database}`);
  await provision(names, kafka, servers, logger);
  const ch = createClickHouse({ url: servers.clickhouseUrl, username: servers.clickhouseUser, password: servers.clickhousePassword, database: names.database });
  cleanup.add('close clickhouse client', () => ch.close());
  const serverPids = {
    kafka: pidFromFile(join(stackDir, 'kafka', 'kafka.pid'), 'kafka.Kafka'),
    clickhouse: pidFromFile(join(stackDir, 'clickhouse', 'clickhouse.pid'), 'clickhouse'),
    redis: pidFromFile(join(stackDir, 'redis', 'redis.pid'), 'redis-server'),
  };
  const missing = Object.entries(serverPids).filter(([, pid]) => pid === undefined);
  if (missing.length > 0) result.notes.push(`no pid for ${missing.map(([n]) => n).join(', ')} under ${stackDir}: their CPU is not measured`);
  Object.assign(result.setup, {
    bundles,
    'topic prefix': names.topicPrefix,
    database: names.database,
    'client address': `${names.localAddress} (its own rate-limit key)`,
    load: `${options.BENCH_CONCURRENCY} requests in flight, ${options.BENCH_EVENTS_PER_REQUEST} events/request, ~${options.BENCH_EVENT_BYTES} B/event`,
    logs: logDir,
  });
  for (const v of [
    'KAFKA_DRIVER',
    'KAFKA_COMPRESSION',
    'PROCESSOR_PARTITIONS_CONCURRENCY',
    'KAFKA_SEND_TIMEOUT_MS',
    'DEDUPE_WINDOW_MS',
    'DEDUPE_MAX_MARKS_PER_PARTITION',
  ]) {
    if (process.env[v] !== undefined) result.setup[v] = process.env[v] ?? '';
  }

  await runBaselines({ options, names, root, stackDir, logDir, bodies, cleanup, signal: runSignal, ch, pids: serverPids, state, result });
  runSignal.throwIfAborted();
  if (options.BENCH_ALLOWANCE_IDS > 0) {
    result.allowance = await runAllowancePhase({
      redis,
      prefix: names.redisPrefix,
      ids: options.BENCH_ALLOWANCE_IDS,
      idsPerRequest: options.BENCH_EVENTS_PER_REQUEST,
    });
    runSignal.throwIfAborted();
  }
  await runPipeline(ch, serverPids, state);
}

async function runPipeline(ch: ReturnType<typeof createClickHouse>, serverPids: Record<string, number | undefined>, state: RunStateFile): Promise<void> {
  const [gatewayPort, gatewayOpsPort, processorOpsPort, adminPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const [consolePort, consoleOpsPort] = [await freePort(), await freePort()];
  const adminToken = randomBytes(24).toString('hex');
  const env = serviceEnv(names, servers, {
    kafkaBrokers: options.KAFKA_BROKERS,
    redisUrl: options.REDIS_URL,
    adminToken,
    ports: {
      gateway: gatewayPort,
      gatewayOps: gatewayOpsPort,
      console: consolePort,
      consoleOps: consoleOpsPort,
      processorOps: processorOpsPort,
      admin: adminPort,
    },
  });
  // DEDUPE_MAX_MARKS_PER_PARTITION set in the environment wins over --dedupe-max-marks.
  if (env.DEDUPE_MAX_MARKS_PER_PARTITION === undefined && options.BENCH_DEDUPE_MAX_MARKS > 0) {
    env.DEDUPE_MAX_MARKS_PER_PARTITION = String(options.BENCH_DEDUPE_MAX_MARKS);
  }
  const marksBound = Number(env.DEDUPE_MAX_MARKS_PER_PARTITION ?? PROCESSOR_DEFAULT_MAX_MARKS);
  const partitions = TOPICS.eventsRaw.partitions;
  result.setup['dedupe bound'] =
    `${n0(marksBound)} marks per partition x ${partitions} partitions = ${n0(marksBound * partitions)} (DEDUPE_MAX_MARKS_PER_PARTITION; production default ${n0(PROCESSOR_DEFAULT_MAX_MARKS)})`;
  say('setup', `dedupe bound ${result.setup['dedupe bound']}`);

  if (options.BENCH_WRITER_ROWS > 0) {
    try {
      result.writer = await runWriterPhase({
        kafka,
        ch,
        names,
        rows: options.BENCH_WRITER_ROWS,
        eventBytes: options.BENCH_EVENT_BYTES,
        source: options.BENCH_SERVICES,
        root,
        env,
        logDir,
        cleanup,
        onSpawn: (pid) => state.addChild(pid),
        timeoutS: options.BENCH_DRAIN_TIMEOUT_S,
        signal: runSignal,
        nodeArgs: options.BENCH_PROFILE ? cpuProfileArgs(logDir, 'processor-writer') : [],
      });
      const w = result.writer;
      say(
        'writer',
        `${n0(w.rowsPerSecFromStart)} rows/s from its start (${n0(w.rowsPerSecFromFirstRow)} from the first row), ${n1(w.insertsPerSec)} inserts/s of ${n0(w.avgRowsPerInsert)} rows`,
      );
    } catch (err) {
      runSignal.throwIfAborted();
      result.errors.push(`writer phase: ${(err as Error).message}`);
      say('writer', `failed: ${(err as Error).message}`);
    }
    // The pipeline's own storage consumer must not insert the writer's records again.
    await skipToEnd(kafka, names.groups.storage, topicName(names.topicPrefix, 'eventsUnique'));
  }

  say('services', `starting gateway (:${gatewayPort}, ops :${gatewayOpsPort}), processor (ops :${processorOpsPort}) and console (admin :${adminPort})`);
  const common = { source: options.BENCH_SERVICES, root, env, logDir, cleanup, onSpawn: (pid: number) => state.addChild(pid) };
  const profiling = (name: string) => (options.BENCH_PROFILE ? cpuProfileArgs(logDir, name) : []);
  // The console only answers the two account creations below (its admin API); it is not measured.
  const [processor, gateway, consoleService] = await Promise.all([
    startService({ ...common, name: 'processor', opsPort: processorOpsPort, nodeArgs: profiling('processor') }),
    startService({ ...common, name: 'gateway', opsPort: gatewayOpsPort, nodeArgs: profiling('gateway') }),
    startService({ ...common, name: 'console', opsPort: consoleOpsPort }),
  ]);
  for (const s of [gateway, processor, consoleService]) {
    result.setup[s.child.name] =
      `${s.source === 'dist' ? `services/${s.child.name}/dist/main.js` : `services/${s.child.name}/src/main.ts (tsx)`}, pid ${s.child.pid}`;
    if (s.note) result.notes.push(s.note);
  }
  for (const child of [processor.child, gateway.child, consoleService.child]) {
    void child.exited.then((code) => {
      if (!runSignal.aborted && !stopping) failure.abort(new Error(`${child.name} exited with ${code} during the run; see ${child.logFile}`));
    });
  }
  const client = createHttpClient(`http://127.0.0.1:${gatewayPort}`, { localAddress: names.localAddress, maxSockets: options.BENCH_CONCURRENCY });
  const probeClient = createHttpClient(`http://127.0.0.1:${gatewayPort}`, { localAddress: names.localAddress, maxSockets: 8 });
  const adminClient = createHttpClient(`http://127.0.0.1:${adminPort}`, { localAddress: names.localAddress, maxSockets: 1 });
  cleanup.add('close http clients', () => {
    client.close();
    probeClient.close();
    adminClient.close();
  });
  const account = await createAccount(adminClient, probeClient, adminToken, `bench ${names.runId}`);
  const probes = await createAccount(adminClient, probeClient, adminToken, `bench ${names.runId} probes`);
  say('services', `ready; accounts ${account.accountId} (load) and ${probes.accountId} (probes), plan growth`);
  const allowanceReset = startAllowanceReset(redis, names.redisPrefix, [account.accountId, probes.accountId]);
  cleanup.add('stop allowance reset', () => allowanceReset.stop());

  const lag = createLagReader(kafka, logger, {
    dedupe: { groupId: names.groups.dedupe, topic: topicName(names.topicPrefix, 'eventsRaw') },
    storage: { groupId: names.groups.storage, topic: topicName(names.topicPrefix, 'eventsUnique') },
  });
  cleanup.add('close lag reader', () => lag.close());
  const source = singleAccountSource(bodies, account.apiKey, options.BENCH_EVENTS_PER_REQUEST);
  const observer: Observer = {
    lag,
    redisUsedMemory: async () => Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1] ?? NaN),
    ch,
    countRows: () => countRows(ch, account.accountId),
    gatewayOpsUrl: gateway.opsUrl,
    processorOpsUrl: processor.opsUrl,
    pids: { gateway: gateway.child.pid, processor: processor.child.pid, ...serverPids },
    groupPrefix: names.groupPrefix,
  };
  const readings = await runSustained({
    observer,
    client,
    source,
    concurrency: options.BENCH_CONCURRENCY,
    warmupS: options.BENCH_WARMUP_S,
    windowS: options.BENCH_DURATION_S,
    drainTimeoutS: options.BENCH_DRAIN_TIMEOUT_S,
    progressS: options.BENCH_PROGRESS_S,
    signal: runSignal,
  });
  const figures = pipelineFigures(readings, cores, names.groupPrefix);
  result.pipeline = figures;
  say('pipeline', `accepted ${n0(figures.acceptedEventsPerSec)} events/s, rows landing ${n0(figures.endToEnd.eventsPerSec)} events/s (unpaced, lag growing)`);
  const memoryReadings: Observation[] = [readings.start, readings.middle, readings.end];

  if (options.BENCH_SEARCH_STEPS > 0 && !figures.drain.drained) {
    result.searchSkipped = `${n0(figures.drain.remaining)} events of the unpaced phase were still on their way after ${options.BENCH_DRAIN_TIMEOUT_S} s`;
    say('search', `not run: ${result.searchSkipped}`);
  } else if (options.BENCH_SEARCH_STEPS > 0) {
    const { search, readings: stepReadings } = await runSearch({
      observer,
      client,
      source,
      concurrency: options.BENCH_CONCURRENCY,
      unpacedEndToEnd: figures.endToEnd.eventsPerSec,
      acceptCapacity: figures.acceptedEventsPerSec,
      settleS: options.BENCH_SEARCH_SETTLE_S,
      windowS: options.BENCH_SEARCH_WINDOW_S,
      maxSteps: options.BENCH_SEARCH_STEPS,
      drainTimeoutS: options.BENCH_DRAIN_TIMEOUT_S,
      signal: runSignal,
    });
    result.search = search;
    memoryReadings.push(...stepReadings);
  }

  if (options.BENCH_FRESHNESS_DURATION_S > 0 && !figures.drain.drained) {
    // Probes would queue behind the leftover backlog and measure the drain, not freshness.
    result.freshnessSkipped = `${n0(figures.drain.remaining)} events of the sustained phase were still on their way after ${options.BENCH_DRAIN_TIMEOUT_S} s (raise --drain-timeout or shorten --duration)`;
    say('freshness', `not measured: ${result.freshnessSkipped}`);
  } else if (options.BENCH_FRESHNESS_DURATION_S > 0) {
    // Half the rate with lag flat; without a search, half the unpaced phase's rows landing.
    const sustained = result.search?.sustainableEventsPerSec ?? Math.min(figures.endToEnd.eventsPerSec, figures.acceptedEventsPerSec);
    const rate = options.BENCH_FRESHNESS_RATE || Math.max(options.BENCH_EVENTS_PER_REQUEST, Math.round(sustained / 2));
    const { start, end, ...freshness } = await runFreshness({
      observer,
      client,
      probeClient,
      ch,
      source,
      probeApiKey: probes.apiKey,
      probeAccountId: probes.accountId,
      runId: names.runId,
      bodies,
      concurrency: options.BENCH_CONCURRENCY,
      eventsPerSecond: rate,
      durationS: options.BENCH_FRESHNESS_DURATION_S,
      probeIntervalMs: options.BENCH_PROBE_INTERVAL_MS,
      pollMs: options.BENCH_PROBE_POLL_MS,
      progressS: options.BENCH_PROGRESS_S,
      signal: runSignal,
    });
    result.freshness = freshness;
    memoryReadings.push(start, end);
  }
  const memory = memoryFigures(memoryReadings, marksBound, partitions);
  if (memory) result.memory = { ...memory, verdict: judgeMemory(memory) };
  stopping = true;
  // Stopped here rather than in the cleanup so the CPU profiles exist before the report.
  for (const s of [gateway, processor]) {
    const t0 = Date.now();
    await s.child.stop();
    say(s.child.name, `stopped (exit ${await s.child.exited}) in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    (result.serviceLogs ??= {})[s.child.name] = summarizeLog(s.child.logFile);
  }
  if (options.BENCH_PROFILE) {
    for (const name of ['gateway', 'processor', ...(result.writer ? ['processor-writer'] : [])]) {
      const summary = summarizeProfile(logDir, name);
      if (summary) (result.profiles ??= {})[name] = summary;
      else result.notes.push(`no CPU profile for ${name} (it did not exit cleanly)`);
    }
  }
}

let exitCode = 0;
try {
  await main();
} catch (err) {
  stopping = true;
  if (cleanup.signal.aborted) {
    result.errors.push('interrupted: the figures above are incomplete');
    exitCode = 130;
  } else {
    const cause = failure.signal.aborted ? (failure.signal.reason as Error) : (err as Error);
    result.errors.push(cause.stack ?? String(cause));
    exitCode = 1;
  }
} finally {
  stopping = true;
  result.finishedAt = new Date().toISOString();
  ratiosAndTargets(result);
  try {
    writeResult(resultFile, result);
    console.log(`${formatReport(result)}\n\nresult: ${resultFile}`);
  } catch (err) {
    say('report', `could not write the result: ${(err as Error).message}`);
  }
  say('cleanup', 'stopping services and removing what the run created');
  await cleanup.run();
}
process.exit(exitCode);

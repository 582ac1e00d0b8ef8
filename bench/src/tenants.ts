/**
 * `npm run bench:tenants`: the pipeline under a tenant mix instead of one unlimited account.
 * `--accounts` accounts (default 2,000) are created through the admin API on real plans; the
 * traffic is shared among them by a Zipf law, each request from its account's own key, of 1, 10
 * or 100 events with UUIDv7 or random ids, a few percent sent twice. Per-account rate limits,
 * the monthly allowances (never reset), the seen-id memory, dedupe and the usage reconciler run
 * as in production. The phases are the pipeline's (unpaced, lag-flat search, freshness at half
 * load) and so are the figures, plus the answers 402 / 429 and the share of events refused.
 * The baselines, the allowance phase and the writer phase belong to `npm run bench`.
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { mkdirSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { createClickHouse, createKafkaClient, createLogger, createRedis, REPO_ROOT, sql, topicName } from '@ingest/platform';
import { freePort } from '@ingest/testkit';
import { createCleanup } from './cleanup.js';
import { benchNames, createAccount, provision, serviceEnv, teardown } from './environment.js';
import { createBodyFactory } from './events.js';
import { pipelineFigures } from './figures.js';
import { runFreshness } from './freshness.js';
import { createHttpClient } from './http-client.js';
import { liveRuns, removeLeftovers, writeRunState } from './leftovers.js';
import { createLagReader, type Observer } from './observe.js';
import { type BenchOptions, loadBenchOptions, usage } from './options.js';
import { pidFromFile } from './proc-stats.js';
import { type BenchResult, formatReport, writeResult } from './report.js';
import { n0, say } from './say.js';
import { runSearch } from './search.js';
import { ensureBundles, startService, summarizeLog } from './services.js';
import { runSustained } from './sustained.js';
import { createTenants } from './tenant-accounts.js';
import { buildAccountMix, countByPlan, describeSizeMix, parseSizeMix, seededRandom } from './tenant-mix.js';
import { phaseOf, refusals, type TenantMixResult } from './tenant-report.js';
import { createTenantSource } from './tenant-source.js';

function optionsOrExit(): BenchOptions {
  try {
    const parsed = loadBenchOptions(process.argv.slice(2), process.env);
    if (parsed) {
      parseSizeMix(parsed.BENCH_TENANT_SIZES);
      return parsed;
    }
    console.log(usage().replace('npm run bench --', 'npm run bench:tenants --'));
    process.exit(0);
  } catch (err) {
    console.error(`${(err as Error).message}\n\n${usage()}`);
    process.exit(2);
  }
}

const options = optionsOrExit();
/** Ceilings bench:tenants leaves at the services' own defaults (serviceEnv lifts them for `npm run bench`). */
const PRODUCTION_LIMITS = [
  'ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_GROWTH',
  'ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_GROWTH',
  'USAGE_RECONCILE_INTERVAL_MS',
  'DEDUPE_MAX_MARKS_PER_PARTITION',
];

const root = REPO_ROOT.replace(/\/$/, '');
const stackDir = resolve(root, options.STACK_DIR);
const stamp = new Date()
  .toISOString()
  .replace(/[-:]/g, '')
  .replace(/\.\d+Z$/, 'Z');
const benchDir = join(stackDir, 'bench');
const logDir = join(benchDir, `tenants-${stamp}`);
const resultFile = join(benchDir, `tenants-${stamp}.json`);
const cleanup = createCleanup();
const logger = createLogger({ service: 'bench', level: 'fatal' });
const names = benchNames();
const servers = { clickhouseUrl: options.CLICKHOUSE_URL, clickhouseUser: options.CLICKHOUSE_USER, clickhousePassword: options.CLICKHOUSE_PASSWORD };
const kafka = createKafkaClient({ brokers: options.KAFKA_BROKERS, clientId: names.clientId, logger });
const redis = createRedis({ url: options.REDIS_URL });
const cores = availableParallelism();

const result: BenchResult = {
  startedAt: new Date().toISOString(),
  machine: { cores, node: process.version, loadAverage: loadavg() },
  setup: { profile: 'tenant mix (npm run bench:tenants)' },
  notes: [
    'RATE_LIMIT_PER_MINUTE is 1,000,000,000: every request leaves from one address, where real tenants send from many (its Redis call on every request is measured)',
    'per-account rate limits, monthly allowances (never reset), dedupe bound and usage reconciler at the services defaults',
  ],
  baselines: {},
  ratios: {},
  targets: [],
  errors: [],
};

const failure = new AbortController();
const runSignal = AbortSignal.any([cleanup.signal, failure.signal]);
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
  // Thousands of accounts leave tens of thousands of Redis keys (counters, seen ids, rate-limit
  // buckets), and a loaded machine deletes topics slowly: more than the cleanup's default bound.
  const teardownBoundMs = 180_000;
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
    teardownBoundMs,
  );

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
  Object.assign(result.setup, { bundles, 'topic prefix': names.topicPrefix, database: names.database, logs: logDir });

  const ports = {
    gateway: await freePort(),
    gatewayOps: await freePort(),
    console: await freePort(),
    consoleOps: await freePort(),
    processorOps: await freePort(),
    admin: await freePort(),
  };
  const adminToken = randomBytes(24).toString('hex');
  const env = serviceEnv(names, servers, { kafkaBrokers: options.KAFKA_BROKERS, redisUrl: options.REDIS_URL, adminToken, ports });
  for (const v of PRODUCTION_LIMITS) env[v] = process.env[v];
  for (const v of ['KAFKA_DRIVER', 'KAFKA_COMPRESSION', 'PROCESSOR_PARTITIONS_CONCURRENCY', ...PRODUCTION_LIMITS]) {
    if (process.env[v] !== undefined) result.setup[v] = process.env[v] ?? '';
  }

  say('services', `starting gateway (:${ports.gateway}), processor and console (admin :${ports.admin})`);
  const common = { source: options.BENCH_SERVICES, root, env, logDir, cleanup, onSpawn: (pid: number) => state.addChild(pid) };
  const [processor, gateway, consoleService] = await Promise.all([
    startService({ ...common, name: 'processor', opsPort: ports.processorOps }),
    startService({ ...common, name: 'gateway', opsPort: ports.gatewayOps }),
    startService({ ...common, name: 'console', opsPort: ports.consoleOps }),
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
  const client = createHttpClient(`http://127.0.0.1:${ports.gateway}`, { localAddress: names.localAddress, maxSockets: options.BENCH_CONCURRENCY });
  const probeClient = createHttpClient(`http://127.0.0.1:${ports.gateway}`, { localAddress: names.localAddress, maxSockets: 8 });
  const setupClient = createHttpClient(`http://127.0.0.1:${ports.gateway}`, {
    localAddress: names.localAddress,
    maxSockets: options.BENCH_TENANT_SETUP_CONCURRENCY,
  });
  const adminClient = createHttpClient(`http://127.0.0.1:${ports.admin}`, {
    localAddress: names.localAddress,
    maxSockets: options.BENCH_TENANT_SETUP_CONCURRENCY,
  });
  cleanup.add('close http clients', () => {
    for (const c of [client, probeClient, setupClient, adminClient]) c.close();
  });

  const mix = buildAccountMix({ accounts: options.BENCH_TENANT_ACCOUNTS, s: options.BENCH_TENANT_ZIPF_S, budgetEvents: options.BENCH_TENANT_BUDGET });
  const byPlan = countByPlan(mix);
  say(
    'setup',
    `creating ${n0(mix.length)} accounts (${Object.entries(byPlan)
      .map(([p, c]) => `${p} ${n0(c.accounts)}`)
      .join(', ')}) through the admin API`,
  );
  const setupStarted = Date.now();
  const tenants = await createTenants({
    admin: adminClient,
    http: setupClient,
    adminToken,
    mix,
    namePrefix: `bench ${names.runId}`,
    concurrency: options.BENCH_TENANT_SETUP_CONCURRENCY,
    signal: runSignal,
    onProgress: (n) => say('setup', `${n0(n)} accounts created`),
  });
  const setupS = (Date.now() - setupStarted) / 1000;
  setupClient.close();
  const probes = await createAccount(adminClient, probeClient, adminToken, `bench ${names.runId} probes`);
  say('setup', `${n0(tenants.length)} accounts with their keys accepted by the gateway in ${setupS.toFixed(1)} s; probes ${probes.accountId}`);

  const random = seededRandom(options.BENCH_TENANT_SEED);
  const sizes = parseSizeMix(options.BENCH_TENANT_SIZES);
  const source = createTenantSource({
    keys: tenants.map((t) => ({
      apiKey: t.apiKey,
      share: t.share,
      ids: random() < 0.8 ? 'uuidv7' : 'uuidv4',
      domain: `t${t.rank}.${names.runId}.example.com`,
    })),
    sizes,
    retryShare: options.BENCH_TENANT_RETRY_PERCENT / 100,
    eventBytes: options.BENCH_EVENT_BYTES,
    random,
  });
  const tenantMix: TenantMixResult = {
    accounts: tenants.length,
    zipfS: options.BENCH_TENANT_ZIPF_S,
    budgetEvents: options.BENCH_TENANT_BUDGET,
    byPlan,
    topShare: { first: mix[0]?.share ?? 0, top10: mix.slice(0, 10).reduce((a, m) => a + m.share, 0) },
    setupS,
    sizes: options.BENCH_TENANT_SIZES,
    meanEventsPerRequest: describeSizeMix(sizes).meanEvents,
    retryPercent: options.BENCH_TENANT_RETRY_PERCENT,
    ids: {},
    requests: 0,
    retries: 0,
    events: 0,
    phases: [],
  };
  result.tenantMix = tenantMix;
  Object.assign(result.setup, {
    'client address': `${names.localAddress} (its own rate-limit key)`,
    load: `${options.BENCH_CONCURRENCY} requests in flight, ~${options.BENCH_EVENT_BYTES} B/event`,
  });

  const lag = createLagReader(kafka, logger, {
    dedupe: { groupId: names.groups.dedupe, topic: topicName(names.topicPrefix, 'eventsRaw') },
    storage: { groupId: names.groups.storage, topic: topicName(names.topicPrefix, 'eventsUnique') },
  });
  cleanup.add('close lag reader', () => lag.close());
  const observer: Observer = {
    lag,
    redisUsedMemory: async () => Number(/^used_memory:(\d+)/m.exec(await redis.info('memory'))?.[1] ?? NaN),
    ch,
    // Every account's rows but the probes' (the database is the run's own).
    countRows: async () => {
      const [row] = await ch.query<{ n: string }>(sql`SELECT count() AS n FROM events WHERE account_id != ${probes.accountId}`);
      return Number(row?.n ?? 0);
    },
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
  tenantMix.phases.push(phaseOf('unpaced window', figures.windowS, figures.load, readings.latencies202Ms));
  say(
    'pipeline',
    `accepted ${n0(figures.acceptedEventsPerSec)} events/s (${(refusals(figures.load).share * 100).toFixed(1)}% refused), rows landing ${n0(figures.endToEnd.eventsPerSec)} events/s (unpaced, lag growing)`,
  );

  if (options.BENCH_SEARCH_STEPS > 0 && !figures.drain.drained) {
    result.searchSkipped = `${n0(figures.drain.remaining)} events of the unpaced phase were still on their way after ${options.BENCH_DRAIN_TIMEOUT_S} s`;
    say('search', `not run: ${result.searchSkipped}`);
  } else if (options.BENCH_SEARCH_STEPS > 0) {
    const { search } = await runSearch({
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
      judgeOnAnswered: true,
    });
    result.search = search;
    for (const [i, step] of search.steps.entries()) {
      tenantMix.phases.push({
        name: `search step ${i + 1} (${n0(step.targetEventsPerSec)}/s)`,
        seconds: step.seconds,
        load: step.load,
        latency202Ms: step.latency202Ms,
      });
    }
  }

  if (options.BENCH_FRESHNESS_DURATION_S > 0 && !figures.drain.drained) {
    result.freshnessSkipped = `${n0(figures.drain.remaining)} events of the unpaced phase were still on their way after ${options.BENCH_DRAIN_TIMEOUT_S} s`;
    say('freshness', `not measured: ${result.freshnessSkipped}`);
  } else if (options.BENCH_FRESHNESS_DURATION_S > 0) {
    const sustained = result.search?.sustainableEventsPerSec ?? Math.min(figures.endToEnd.eventsPerSec, figures.acceptedEventsPerSec);
    const rate = options.BENCH_FRESHNESS_RATE || Math.max(100, Math.round(sustained / 2));
    // The readings at its start and end are for `npm run bench`'s memory check, not kept here.
    const {
      start: _start,
      end: _end,
      ...freshness
    } = await runFreshness({
      observer,
      client,
      probeClient,
      ch,
      source,
      probeApiKey: probes.apiKey,
      probeAccountId: probes.accountId,
      runId: names.runId,
      bodies: createBodyFactory(names.runId, options.BENCH_EVENT_BYTES),
      concurrency: options.BENCH_CONCURRENCY,
      eventsPerSecond: rate,
      durationS: options.BENCH_FRESHNESS_DURATION_S,
      probeIntervalMs: options.BENCH_PROBE_INTERVAL_MS,
      pollMs: options.BENCH_PROBE_POLL_MS,
      progressS: options.BENCH_PROGRESS_S,
      signal: runSignal,
    });
    result.freshness = freshness;
    tenantMix.phases.push({ name: 'freshness (half load)', seconds: freshness.seconds, load: freshness.load, latency202Ms: freshness.load202Ms });
  }
  const stats = source.stats();
  Object.assign(tenantMix, { requests: stats.requests, retries: stats.retries, events: stats.events, ids: stats.eventsByIds });
  stopping = true;
  for (const s of [gateway, processor]) {
    await s.child.stop();
    (result.serviceLogs ??= {})[s.child.name] = summarizeLog(s.child.logFile);
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

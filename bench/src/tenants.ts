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
import { sql } from '@ingest/platform';
import { createAccount } from './environment.js';
import { createBodyFactory } from './events.js';
import { createHttpClient } from './http-client.js';
import { usage } from './options.js';
import {
  createRunFrame,
  createRunObserver,
  optionsOrExit,
  prepareRun,
  runFreshnessPhase,
  runSearchPhase,
  runToEnd,
  runUnpacedPhase,
  serviceSetup,
  startRunServices,
} from './run-frame.js';
import { tenantMixTargets } from './report.js';
import { n0, say } from './say.js';
import { summarizeLog } from './services.js';
import { createTenants } from './tenant-accounts.js';
import { buildAccountMix, countByPlan, describeSizeMix, parseSizeMix, seededRandom } from './tenant-mix.js';
import { phaseOf, refusals, type TenantMixResult } from './tenant-report.js';
import { createTenantSource } from './tenant-source.js';

const options = optionsOrExit({
  check: (parsed) => parseSizeMix(parsed.BENCH_TENANT_SIZES),
  usage: () => usage().replace('npm run bench --', 'npm run bench:tenants --'),
});
/** Ceilings bench:tenants leaves at the services' own defaults (serviceEnv lifts them for `npm run bench`). */
const PRODUCTION_LIMITS = [
  'ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_GROWTH',
  'ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_GROWTH',
  'USAGE_RECONCILE_INTERVAL_MS',
  'DEDUPE_MAX_MARKS_PER_PARTITION',
];

const frame = createRunFrame('tenants', options, {
  setup: { profile: 'tenant mix (npm run bench:tenants)' },
  notes: [
    'RATE_LIMIT_PER_MINUTE is 1,000,000,000: every request leaves from one address, where real tenants send from many (its Redis call on every request is measured)',
    'per-account rate limits, monthly allowances (never reset), dedupe bound and usage reconciler at the services defaults',
  ],
});
const { logDir, cleanup, names, result, runSignal } = frame;

async function main(): Promise<void> {
  // Thousands of accounts leave tens of thousands of Redis keys (counters, seen ids, rate-limit
  // buckets), and a loaded machine deletes topics slowly: more than the cleanup's default bound.
  const { state, ch, serverPids, bundles } = await prepareRun(frame, { teardownBoundMs: 180_000 });
  Object.assign(result.setup, { bundles, 'topic prefix': names.topicPrefix, database: names.database, logs: logDir });

  const { ports, adminToken, env } = await serviceSetup(frame);
  for (const v of PRODUCTION_LIMITS) env[v] = process.env[v];
  for (const v of ['KAFKA_DRIVER', 'KAFKA_COMPRESSION', 'PROCESSOR_PARTITIONS_CONCURRENCY', ...PRODUCTION_LIMITS]) {
    if (process.env[v] !== undefined) result.setup[v] = process.env[v] ?? '';
  }

  say('services', `starting gateway (:${ports.gateway}), processor and console (admin :${ports.admin})`);
  const services = await startRunServices(frame, { env, ports, state });
  const { processor, gateway } = services;
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

  // Every account's rows but the probes' (the database is the run's own).
  const observer = createRunObserver(frame, {
    ch,
    services,
    serverPids,
    countRows: async () => {
      const [row] = await ch.query<{ n: string }>(sql`SELECT count() AS n FROM events WHERE account_id != ${probes.accountId}`);
      return Number(row?.n ?? 0);
    },
  });

  const phase = { observer, client, source };
  const { readings, figures } = await runUnpacedPhase(frame, phase);
  tenantMix.phases.push(phaseOf('unpaced window', figures.windowS, figures.load, readings.latencies202Ms));
  say(
    'pipeline',
    `accepted ${n0(figures.acceptedEventsPerSec)} events/s (${(refusals(figures.load).share * 100).toFixed(1)}% refused), rows landing ${n0(figures.endToEnd.eventsPerSec)} events/s (unpaced, lag growing)`,
  );

  const searched = await runSearchPhase(frame, phase, figures, { judgeOnAnswered: true });
  for (const [i, step] of (searched?.search.steps ?? []).entries()) {
    tenantMix.phases.push({
      name: `search step ${i + 1} (${n0(step.targetEventsPerSec)}/s)`,
      seconds: step.seconds,
      load: step.load,
      latency202Ms: step.latency202Ms,
    });
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
    } = await runFreshnessPhase(frame, phase, {
      probeClient,
      ch,
      probes,
      bodies: createBodyFactory(names.runId, options.BENCH_EVENT_BYTES),
      eventsPerSecond: rate,
    });
    result.freshness = freshness;
    tenantMix.phases.push({ name: 'freshness (half load)', seconds: freshness.seconds, load: freshness.load, latency202Ms: freshness.load202Ms });
  }
  const stats = source.stats();
  Object.assign(tenantMix, { requests: stats.requests, retries: stats.retries, events: stats.events, ids: stats.eventsByIds });
  frame.stopping = true;
  for (const s of [gateway, processor]) {
    await s.child.stop();
    (result.serviceLogs ??= {})[s.child.name] = summarizeLog(s.child.logFile);
  }
}

await runToEnd(frame, main, tenantMixTargets);

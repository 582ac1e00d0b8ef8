/**
 * `npm run bench`: the whole pipeline (real gateway and processor processes, local Kafka,
 * ClickHouse and Redis) next to raw baselines measured in the same run. See options.ts for the
 * flags. Progress goes to stderr, the report to stdout, the full result to
 * .local/bench/pipeline-<timestamp>.json. Everything the run creates is removed at the end,
 * also on failure and Ctrl-C (and by the next run if this one is killed outright).
 */
import { TOPICS, topicName, type createClickHouse } from '@ingest/platform';
import { runAllowancePhase } from './allowance-phase.js';
import { runBaselines } from './baseline-phase.js';
import { brokerBytes } from './broker-bytes.js';
import { countRows, createAccount, startAllowanceReset } from './environment.js';
import { createBodyFactory } from './events.js';
import { createHttpClient } from './http-client.js';
import { singleAccountSource } from './load.js';
import type { RunStateFile } from './leftovers.js';
import { judgeMemory, memoryFigures } from './memory.js';
import type { Observation } from './observe.js';
import { cpuProfileArgs, summarizeProfile } from './profile.js';
import { ratiosAndTargets } from './report.js';
import {
  createRunFrame,
  createRunObserver,
  optionsOrExit,
  type PreparedRun,
  prepareRun,
  runFreshnessPhase,
  runSearchPhase,
  runSoakPhase,
  runToEnd,
  runUnpacedPhase,
  serviceSetup,
  startRunServices,
} from './run-frame.js';
import { summarizeLog } from './services.js';
import { n0, n1, say } from './say.js';
import { runWriterPhase, skipToEnd } from './writer-phase.js';

const options = optionsOrExit();
/** services/processor/src/config.ts: DEDUPE_MAX_MARKS_PER_PARTITION's default. */
const PROCESSOR_DEFAULT_MAX_MARKS = 2_000_000;

const frame = createRunFrame('pipeline', options, {
  setup: {},
  notes: [
    'RATE_LIMIT_PER_MINUTE is 1,000,000,000: the per-address rate limit is not what is measured (its Redis call on every request still is)',
    "the growth plan's per-account ceilings are 1,000,000,000 requests and events a second: not what is measured (their one Redis call per request still is)",
    'the allowance counters are set back to 0 every second (growth plan: 500,000 a month); the allowance script on every request is still measured',
  ],
});
const { root, stackDir, logDir, cleanup, names, kafka, redis, result, runSignal } = frame;
const bodies = createBodyFactory(names.runId, options.BENCH_EVENT_BYTES);

async function main(): Promise<void> {
  const { state, ch, serverPids, bundles } = await prepareRun(frame);
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

async function runPipeline(ch: ReturnType<typeof createClickHouse>, serverPids: PreparedRun['serverPids'], state: RunStateFile): Promise<void> {
  const { ports, adminToken, env } = await serviceSetup(frame);
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

  say('services', `starting gateway (:${ports.gateway}, ops :${ports.gatewayOps}), processor (ops :${ports.processorOps}) and console (admin :${ports.admin})`);
  const services = await startRunServices(frame, { env, ports, state, nodeArgs: (name) => (options.BENCH_PROFILE ? cpuProfileArgs(logDir, name) : []) });
  const { processor, gateway } = services;
  const client = createHttpClient(`http://127.0.0.1:${ports.gateway}`, { localAddress: names.localAddress, maxSockets: options.BENCH_CONCURRENCY });
  const probeClient = createHttpClient(`http://127.0.0.1:${ports.gateway}`, { localAddress: names.localAddress, maxSockets: 8 });
  const adminClient = createHttpClient(`http://127.0.0.1:${ports.admin}`, { localAddress: names.localAddress, maxSockets: 1 });
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

  const source = singleAccountSource(bodies, account.apiKey, options.BENCH_EVENTS_PER_REQUEST);
  const observer = createRunObserver(frame, { ch, services, serverPids, countRows: () => countRows(ch, account.accountId) });
  const phase = { observer, client, source };
  const { readings, figures } = await runUnpacedPhase(frame, phase);
  say('pipeline', `accepted ${n0(figures.acceptedEventsPerSec)} events/s, rows landing ${n0(figures.endToEnd.eventsPerSec)} events/s (unpaced, lag growing)`);
  const memoryReadings: Observation[] = [readings.start, readings.middle, readings.end];

  const searched = await runSearchPhase(frame, phase, figures);
  if (searched) memoryReadings.push(...searched.readings);

  if (options.BENCH_FRESHNESS_DURATION_S > 0 && !figures.drain.drained) {
    // Probes would queue behind the leftover backlog and measure the drain, not freshness.
    result.freshnessSkipped = `${n0(figures.drain.remaining)} events of the sustained phase were still on their way after ${options.BENCH_DRAIN_TIMEOUT_S} s (raise --drain-timeout or shorten --duration)`;
    say('freshness', `not measured: ${result.freshnessSkipped}`);
  } else if (options.BENCH_FRESHNESS_DURATION_S > 0) {
    // Half the rate with lag flat; without a search, half the unpaced phase's rows landing.
    const sustained = result.search?.sustainableEventsPerSec ?? Math.min(figures.endToEnd.eventsPerSec, figures.acceptedEventsPerSec);
    const rate = options.BENCH_FRESHNESS_RATE || Math.max(options.BENCH_EVENTS_PER_REQUEST, Math.round(sustained / 2));
    const { start, end, ...freshness } = await runFreshnessPhase(frame, phase, { probeClient, ch, probes, bodies, eventsPerSecond: rate });
    result.freshness = freshness;
    memoryReadings.push(start, end);
  }
  if (options.BENCH_SOAK_DURATION_S > 0) {
    const rate = options.BENCH_SOAK_RATE || result.search?.sustainableEventsPerSec;
    if (rate === undefined) {
      result.soakSkipped = 'no rate of the search was flat (--soak-rate sets one)';
      say('soak', `not run: ${result.soakSkipped}`);
    } else {
      result.soak = await runSoakPhase(frame, phase, { accountId: account.accountId, eventsPerSecond: rate });
    }
  }
  // A reading, not a phase: a broker that does not answer costs the figure, not the run.
  result.brokerBytes = await brokerBytes(kafka, stackDir, topicName(names.topicPrefix, 'eventsRaw')).catch((err: unknown) => {
    result.notes.push(`bytes on the broker not read: ${(err as Error).message}`);
    return undefined;
  });
  const memory = memoryFigures(memoryReadings, marksBound, partitions);
  if (memory) result.memory = { ...memory, verdict: judgeMemory(memory) };
  frame.stopping = true;
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

await runToEnd(frame, main, ratiosAndTargets);

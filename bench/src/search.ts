/**
 * Phase 5: the highest rate the pipeline carries with lag flat. Paced load (the freshness phase's
 * load generator) at rates chosen by search-plan.ts, each for a short window after a few seconds
 * of settling; a window is flat when the backlog (accepted minus stored) did not grow. Between
 * steps the backlog is left to drain so each step starts from an empty pipeline.
 */
import type { HttpClient } from './http-client.js';
import { acceptedToStore, diffCounters, type LoadCounters, type RequestSource, startLoad } from './load.js';
import { formatLag, type Observation, observe, type Observer } from './observe.js';
import { cpuDelta } from './proc-stats.js';
import { deltaBy } from './prom.js';
import { sleep } from './processes.js';
import { n0, percentile, say } from './say.js';
import { type FlatVerdict, firstRate, judgeWindow, nextRate, record, type SearchBounds, type SearchState } from './search-plan.js';

export interface SearchStep {
  targetEventsPerSec: number;
  seconds: number;
  verdict: FlatVerdict;
  /** Rows landing in ClickHouse per second, from the readings at the window's start and end (noisier than the trend). */
  storedEventsPerSec: number;
  lag: { start: Record<string, number>; end: Record<string, number> };
  /** CPU seconds per million events accepted in the window, per process ('bench' is the load generator). */
  cpuPerMillion: Record<string, number | undefined>;
  /** RSS at the window's end, MB. */
  rssMb: Record<string, number | undefined>;
  /** ClickHouse inserts per second by table over the window. */
  insertsPerSec: Record<string, number>;
  /** The load generator's counters over the window (answers by status, events refused). */
  load: LoadCounters;
  /** Send -> 202 over the window, ms. */
  latency202Ms: { p50?: number; p99?: number };
  /** Seconds until the backlog drained after the step (undefined: it did not within the limit). */
  drainedInS?: number;
}

export interface SearchResult {
  steps: SearchStep[];
  /** Highest paced rate judged flat; undefined when none was. */
  sustainableEventsPerSec?: number;
  startedFrom: { unpacedEndToEnd: number; acceptCapacity: number };
  settleS: number;
  windowS: number;
  /** Whether a step's rate counted as offered by the events accepted or answered (see SearchContext). */
  offeredBy: 'accepted' | 'answered';
}

export interface SearchContext {
  observer: Observer;
  client: HttpClient;
  source: RequestSource;
  concurrency: number;
  unpacedEndToEnd: number;
  acceptCapacity: number;
  settleS: number;
  windowS: number;
  maxSteps: number;
  drainTimeoutS: number;
  signal: AbortSignal;
  /**
   * Judge whether the rate was offered by the events the gateway answered (any 2xx or 4xx),
   * not only those it accepted: in the tenant mix some accounts are refused (402, 429) by design.
   */
  judgeOnAnswered?: boolean;
}

/** The result, and every step's readings at its window start and end (for the memory check). */
export async function runSearch(ctx: SearchContext): Promise<{ search: SearchResult; readings: Observation[] }> {
  // Paced, the gateway may accept more than it did while the unpaced load starved the processor
  // of CPU (and vice versa); a rate it cannot accept is judged not flat (see judgeWindow).
  const bounds: SearchBounds = { maxRate: ctx.acceptCapacity * 1.25, step: Math.max(1, Math.round(ctx.source.meanEventsPerRequest)), resolution: 0.05 };
  const out: SearchResult = {
    steps: [],
    startedFrom: { unpacedEndToEnd: ctx.unpacedEndToEnd, acceptCapacity: ctx.acceptCapacity },
    settleS: ctx.settleS,
    windowS: ctx.windowS,
    offeredBy: ctx.judgeOnAnswered ? 'answered' : 'accepted',
  };
  const readings: Observation[] = [];
  let state: SearchState = {};
  let rate: number | undefined = firstRate(ctx.unpacedEndToEnd, bounds);
  say('search', `paced steps of ${ctx.settleS}s settling + ${ctx.windowS}s window, at most ${ctx.maxSteps}; first at ${n0(rate)} events/s`);
  for (let i = 1; rate !== undefined && i <= ctx.maxSteps; i++) {
    ctx.signal.throwIfAborted();
    const { step, start, end } = await runStep(ctx, rate);
    out.steps.push(step);
    readings.push(start, end);
    state = record(state, rate, step.verdict.flat);
    say(
      'search',
      `step ${i}: ${n0(rate)} events/s -> accepted ${n0(step.verdict.achievedEventsPerSec)}, stored ${n0(step.storedEventsPerSec)} events/s; ` +
        `${step.verdict.flat ? 'FLAT' : 'NOT flat'} (${step.verdict.reason}, allowed < ${n0(step.verdict.allowed)}); lag ${formatLag(step.lag.end)}`,
    );
    step.drainedInS = await waitForEmpty(ctx);
    if (step.drainedInS === undefined) {
      say('search', `the backlog did not drain within ${ctx.drainTimeoutS}s; the search stops here`);
      break;
    }
    rate = nextRate(state, bounds);
  }
  out.sustainableEventsPerSec = state.highestFlat;
  say('search', state.highestFlat === undefined ? 'no paced rate kept lag flat' : `end to end with lag flat: ${n0(state.highestFlat)} events/s`);
  return { search: out, readings };
}

async function runStep(ctx: SearchContext, rate: number): Promise<{ step: SearchStep; start: Observation; end: Observation }> {
  const load = startLoad({
    client: ctx.client,
    path: '/v1/events',
    concurrency: ctx.concurrency,
    source: ctx.source,
    eventsPerSecond: rate,
  });
  try {
    await sleep(ctx.settleS * 1000, ctx.signal);
    ctx.signal.throwIfAborted();
    const start = await observe(ctx.observer, load);
    // This step's accepted events minus the account's rows (all steps): only differences
    // between readings mean something.
    const backlog = (o: Observation) => acceptedToStore(o.load) - o.rows;
    const samples = [{ atMs: start.atMs, backlog: backlog(start) }];
    const endAt = start.atMs + ctx.windowS * 1000;
    while (Date.now() < endAt - 1_000 && !ctx.signal.aborted) {
      await sleep(Math.min(1_000, endAt - Date.now()), ctx.signal);
      const atMs = Date.now();
      const accepted = acceptedToStore(load.counters());
      const rows = await ctx.observer.countRows().catch(() => undefined);
      if (rows !== undefined) samples.push({ atMs, backlog: accepted - rows });
    }
    await sleep(endAt - Date.now(), ctx.signal);
    ctx.signal.throwIfAborted();
    const end = await observe(ctx.observer, load);
    samples.push({ atMs: end.atMs, backlog: backlog(end) });
    const seconds = (end.atMs - start.atMs) / 1000;
    const counts = diffCounters(start.load, end.load);
    const latencies = load.latenciesSince(start.atMs, end.atMs, 202);
    const verdict = judgeWindow({
      seconds,
      targetEventsPerSec: rate,
      accepted: counts.eventsAccepted,
      answered: ctx.judgeOnAnswered ? answeredEvents(counts) : undefined,
      backlogStart: backlog(start),
      backlogEnd: backlog(end),
      samples,
    });
    const step: SearchStep = {
      targetEventsPerSec: rate,
      seconds,
      verdict,
      storedEventsPerSec: (end.rows - start.rows) / seconds,
      lag: { start: start.lag, end: end.lag },
      load: counts,
      latency202Ms: { p50: percentile(latencies, 50), p99: percentile(latencies, 99) },
      ...resources(start, end),
    };
    return { step, start, end };
  } finally {
    await load.stop();
  }
}

/** Events in requests the gateway answered with a 2xx or 4xx (not failed, not 5xx). */
export function answeredEvents(c: LoadCounters): number {
  let n = 0;
  for (const [code, events] of Object.entries(c.eventsByStatus)) if (Number(code) >= 200 && Number(code) < 500) n += events;
  return n;
}

function resources(start: Observation, end: Observation): Pick<SearchStep, 'cpuPerMillion' | 'rssMb' | 'insertsPerSec'> {
  const seconds = (end.atMs - start.atMs) / 1000;
  const millions = (end.load.eventsAccepted - start.load.eventsAccepted) / 1e6;
  const perMillion = (cpu: number | undefined) => (cpu === undefined || millions <= 0 ? undefined : cpu / millions);
  const cpuPerMillion: Record<string, number | undefined> = {};
  const rssMb: Record<string, number | undefined> = {};
  for (const name of Object.keys(end.proc.cpu)) {
    cpuPerMillion[name] = perMillion(cpuDelta(start.proc, end.proc, name));
    const m = end.proc.memory[name];
    rssMb[name] = m ? m.rssBytes / 1024 / 1024 : undefined;
  }
  cpuPerMillion.bench = perMillion(end.proc.selfCpu - start.proc.selfCpu);
  const inserts = deltaBy(start.processor, end.processor, 'ingest_clickhouse_insert_duration_seconds_count', 'table');
  const insertsPerSec = Object.fromEntries(Object.entries(inserts).map(([table, n]) => [table, n / seconds]));
  return { cpuPerMillion, rssMb, insertsPerSec };
}

/**
 * Waits until both consumer groups have no lag. Rows are counted per load account and the
 * load generator's counters restart with every step, so lag is what tells "empty" here.
 */
async function waitForEmpty(ctx: SearchContext): Promise<number | undefined> {
  const started = Date.now();
  while (!ctx.signal.aborted && Date.now() - started < ctx.drainTimeoutS * 1000) {
    const lag = await ctx.observer.lag.read().catch(() => ({}) as Record<string, number>);
    if ((lag.dedupe ?? 1) === 0 && (lag.storage ?? 1) === 0) return (Date.now() - started) / 1000;
    await sleep(500, ctx.signal);
  }
  ctx.signal.throwIfAborted();
  return undefined;
}

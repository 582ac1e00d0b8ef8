/**
 * Phase 4: unpaced HTTP load through the real gateway and processor. After a warm-up, a fixed
 * window is measured from readings at its start, middle and end; then the load stops and the
 * bench waits for the backlog to reach ClickHouse.
 */
import type { HttpClient } from './http-client.js';
import { acceptedToStore, type LoadGenerator, type RequestSource, startLoad } from './load.js';
import { formatLag, type Observation, observe, type Observer } from './observe.js';
import { sleep } from './processes.js';
import { n0, say } from './say.js';

export interface SustainedReadings {
  warmupStartMs: number;
  start: Observation;
  middle: Observation;
  end: Observation;
  /** Rows in ClickHouse about every second from the start of the load. */
  timeline: { atMs: number; rows: number; accepted: number }[];
  latenciesMs: number[];
  /** Of the requests answered 202 only (the same as latenciesMs when nothing was refused). */
  latencies202Ms: number[];
  drain: { drained: boolean; seconds: number; remaining: number; afterDrain?: Observation };
}

export interface SustainedContext {
  observer: Observer;
  client: HttpClient;
  source: RequestSource;
  concurrency: number;
  warmupS: number;
  windowS: number;
  drainTimeoutS: number;
  progressS: number;
  signal: AbortSignal;
}

export async function runSustained(ctx: SustainedContext): Promise<SustainedReadings> {
  const warmupStartMs = Date.now();
  const load = startLoad({
    client: ctx.client,
    path: '/v1/events',
    concurrency: ctx.concurrency,
    source: ctx.source,
  });
  const timeline: SustainedReadings['timeline'] = [];
  const sampler = startSampler(ctx, load, timeline);
  try {
    say('pipeline', `warm-up ${ctx.warmupS}s: ${ctx.concurrency} requests in flight, ${ctx.source.meanEventsPerRequest} events each (mean)`);
    await sleep(ctx.warmupS * 1000, ctx.signal);
    await waitForFirstRows(ctx, timeline);
    ctx.signal.throwIfAborted();
    const start = await observe(ctx.observer, load);
    say('pipeline', `window of ${ctx.windowS}s starts (lag ${formatLag(start.lag)})`);
    const endAt = start.atMs + ctx.windowS * 1000;
    await sleep(start.atMs + (ctx.windowS * 1000) / 2 - Date.now(), ctx.signal);
    ctx.signal.throwIfAborted();
    const middle = await observe(ctx.observer, load);
    await sleep(endAt - Date.now(), ctx.signal);
    ctx.signal.throwIfAborted();
    const end = await observe(ctx.observer, load);
    await load.stop();
    const latenciesMs = load.latenciesSince(start.atMs, end.atMs);
    const latencies202Ms = load.latenciesSince(start.atMs, end.atMs, 202);
    const drain = await waitForDrain(ctx, load);
    return { warmupStartMs, start, middle, end, timeline, latenciesMs, latencies202Ms, drain };
  } finally {
    await load.stop();
    await sampler.stop();
  }
}

/** Rows once a second (for the timeline) and a progress line every `progressS`. */
function startSampler(ctx: SustainedContext, load: LoadGenerator, timeline: SustainedReadings['timeline']): { stop(): Promise<void> } {
  const stop = new AbortController();
  const loop = (async () => {
    let last: { atMs: number; rows: number; accepted: number; requests: number } | undefined;
    while (!stop.signal.aborted && !ctx.signal.aborted) {
      const atMs = Date.now();
      const rows = await countOrUndefined(ctx);
      const c = load.counters();
      if (rows !== undefined) {
        timeline.push({ atMs, rows, accepted: acceptedToStore(c) });
        if (!last) {
          last = { atMs, rows, accepted: c.eventsAccepted, requests: c.requests };
        } else if (atMs - last.atMs >= ctx.progressS * 1000) {
          const s = (atMs - last.atMs) / 1000;
          const refused = (c.byStatus[429] ?? 0) + (c.byStatus[503] ?? 0) + (c.byStatus[0] ?? 0);
          const lag = await ctx.observer.lag.read();
          say(
            'pipeline',
            `http ${n0((c.eventsAccepted - last.accepted) / s)} ev/s (${n0((c.requests - last.requests) / s)} req/s, refused so far ${n0(refused)}) | ` +
              `ClickHouse +${n0((rows - last.rows) / s)} rows/s | backlog ${n0(acceptedToStore(c) - rows)} | lag ${formatLag(lag)}`,
          );
          last = { atMs, rows, accepted: c.eventsAccepted, requests: c.requests };
        }
      }
      await sleep(1_000 - (Date.now() - atMs), stop.signal);
    }
  })();
  return {
    async stop() {
      stop.abort();
      await loop;
    },
  };
}

function countOrUndefined(ctx: SustainedContext): Promise<number | undefined> {
  return ctx.observer.countRows().catch(() => undefined);
}

/** The window must not include the consumer groups' first join: wait until rows arrive. */
async function waitForFirstRows(ctx: SustainedContext, timeline: SustainedReadings['timeline']): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!ctx.signal.aborted && (timeline.at(-1)?.rows ?? 0) === 0) {
    if (Date.now() > deadline) throw new Error('no row reached ClickHouse within 60 s of load; see the processor log');
    await sleep(500, ctx.signal);
  }
}

async function waitForDrain(ctx: SustainedContext, load: LoadGenerator): Promise<SustainedReadings['drain']> {
  const accepted = acceptedToStore(load.counters());
  const started = Date.now();
  say('pipeline', `load stopped; waiting up to ${ctx.drainTimeoutS}s for the backlog to reach ClickHouse`);
  let rows = 0;
  while (!ctx.signal.aborted) {
    rows = (await countOrUndefined(ctx)) ?? rows;
    if (rows >= accepted) break;
    if (Date.now() - started > ctx.drainTimeoutS * 1000) break;
    await sleep(500, ctx.signal);
  }
  const seconds = (Date.now() - started) / 1000;
  const afterDrain = ctx.signal.aborted ? undefined : await observe(ctx.observer, load);
  say('pipeline', rows >= accepted ? `backlog drained in ${seconds.toFixed(1)}s` : `${n0(accepted - rows)} events still missing after ${seconds.toFixed(0)}s`);
  return { drained: rows >= accepted, seconds, remaining: Math.max(0, accepted - rows), afterDrain };
}

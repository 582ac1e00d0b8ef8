/**
 * Phase 5: paced load at a fraction of the sustained rate, plus probe events (one request with
 * one event, from their own account) whose 202 time is recorded; ClickHouse is polled for them
 * and accept -> queryable latency is the time the poll that found a probe came back minus the
 * time its 202 came back (so the figure is at most one poll interval pessimistic).
 */
import { setMaxListeners } from 'node:events';
import { type ClickHouse, sql } from '@ingest/platform';
import type { BodyFactory } from './events.js';
import { type GatewayTail, gatewayTail } from './gateway-tail.js';
import type { HttpClient } from './http-client.js';
import { diffCounters, type LoadCounters, type RequestSource, startLoad } from './load.js';
import { formatLag, type Observation, observe, type Observer } from './observe.js';
import { sleep } from './processes.js';
import { n0, percentile, say } from './say.js';

interface Probe {
  id: string;
  sentAtMs: number;
  acceptedAtMs?: number;
  seenAtMs?: number;
  status?: number;
}

export interface FreshnessResult {
  targetEventsPerSec: number;
  seconds: number;
  load: LoadCounters;
  achievedEventsPerSec: number;
  probes: { sent: number; accepted: number; seen: number; missing: number; failed: number };
  latencyMs: { p50?: number; p90?: number; p99?: number; max?: number };
  /** Time from sending a probe to its 202 (the gateway's part). */
  acceptMs: { p50?: number; p99?: number };
  /** Send -> 202 of the paced load's requests over the window. */
  load202Ms: { p50?: number; p99?: number };
  /** The gateway's produce times, GC pauses and event loop lag over the window (gateway-tail.ts). */
  gatewayTail: GatewayTail;
  lag: { start: Record<string, number>; end: Record<string, number> };
  start: Observation;
  end: Observation;
}

export interface FreshnessContext {
  observer: Observer;
  client: HttpClient;
  probeClient: HttpClient;
  ch: ClickHouse;
  source: RequestSource;
  probeApiKey: string;
  probeAccountId: string;
  runId: string;
  /** For the probes' bodies. */
  bodies: BodyFactory;
  concurrency: number;
  eventsPerSecond: number;
  durationS: number;
  probeIntervalMs: number;
  pollMs: number;
  progressS: number;
  signal: AbortSignal;
}

const SETTLE_S = 3;
const PROBE_TIMEOUT_MS = 30_000;

export async function runFreshness(ctx: FreshnessContext): Promise<FreshnessResult> {
  const load = startLoad({
    client: ctx.client,
    path: '/v1/events',
    concurrency: ctx.concurrency,
    source: ctx.source,
    eventsPerSecond: ctx.eventsPerSecond,
  });
  const probes: Probe[] = [];
  const stopProbes = new AbortController();
  setMaxListeners(0, stopProbes.signal);
  try {
    say('freshness', `paced load of ${n0(ctx.eventsPerSecond)} events/s; probes start after ${SETTLE_S}s`);
    await sleep(SETTLE_S * 1000, ctx.signal);
    ctx.signal.throwIfAborted();
    const start = await observe(ctx.observer, load);
    const sender = sendProbes(ctx, probes, stopProbes.signal);
    const poller = pollProbes(ctx, probes, stopProbes.signal);
    const progress = reportProgress(ctx, probes, load, stopProbes.signal);
    await sleep(ctx.durationS * 1000, ctx.signal);
    ctx.signal.throwIfAborted();
    const end = await observe(ctx.observer, load);
    const load202 = load.latenciesSince(start.atMs, end.atMs, 202);
    await load.stop();
    // Stop sending, then give the last probes time to arrive.
    const sendingStopped = Date.now();
    stopProbes.abort();
    await Promise.all([sender, progress]);
    const lastStop = new AbortController();
    const tail = pollProbes(ctx, probes, lastStop.signal);
    while (
      !ctx.signal.aborted &&
      probes.some((p) => p.acceptedAtMs !== undefined && p.seenAtMs === undefined) &&
      Date.now() - sendingStopped < PROBE_TIMEOUT_MS
    ) {
      await sleep(ctx.pollMs, ctx.signal);
    }
    lastStop.abort();
    await Promise.all([poller, tail]);

    const seconds = (end.atMs - start.atMs) / 1000;
    const d = diffCounters(start.load, end.load);
    const accepted = probes.filter((p) => p.acceptedAtMs !== undefined);
    const seen = accepted.filter((p) => p.seenAtMs !== undefined);
    const latencies = seen.map((p) => (p.seenAtMs ?? 0) - (p.acceptedAtMs ?? 0));
    const acceptTimes = accepted.map((p) => (p.acceptedAtMs ?? 0) - p.sentAtMs);
    return {
      targetEventsPerSec: ctx.eventsPerSecond,
      seconds,
      load: d,
      achievedEventsPerSec: d.eventsAccepted / seconds,
      probes: {
        sent: probes.length,
        accepted: accepted.length,
        seen: seen.length,
        missing: accepted.length - seen.length,
        failed: probes.length - accepted.length,
      },
      latencyMs: { p50: percentile(latencies, 50), p90: percentile(latencies, 90), p99: percentile(latencies, 99), max: percentile(latencies, 100) },
      acceptMs: { p50: percentile(acceptTimes, 50), p99: percentile(acceptTimes, 99) },
      load202Ms: { p50: percentile(load202, 50), p99: percentile(load202, 99) },
      gatewayTail: gatewayTail(start, end),
      lag: { start: start.lag, end: end.lag },
      start,
      end,
    };
  } finally {
    stopProbes.abort();
    await load.stop();
  }
}

/** One probe every `probeIntervalMs`, on schedule even while earlier ones wait for their 202. */
async function sendProbes(ctx: FreshnessContext, probes: Probe[], stop: AbortSignal): Promise<void> {
  const inFlight: Promise<void>[] = [];
  const headers = { authorization: `Bearer ${ctx.probeApiKey}` };
  for (let i = 0; !stop.aborted && !ctx.signal.aborted; i++) {
    const probe: Probe = { id: `${ctx.runId}-probe-${i}`, sentAtMs: Date.now() };
    probes.push(probe);
    inFlight.push(
      ctx.probeClient.request('POST', '/v1/events', { body: ctx.bodies.probe(probe.id), headers }).then(
        (res) => {
          probe.status = res.status;
          if (res.status === 202) probe.acceptedAtMs = Date.now();
        },
        () => {
          probe.status = 0;
        },
      ),
    );
    await sleep(probe.sentAtMs + ctx.probeIntervalMs - Date.now(), stop);
  }
  await Promise.all(inFlight);
}

async function pollProbes(ctx: FreshnessContext, probes: Probe[], stop: AbortSignal): Promise<void> {
  while (!stop.aborted && !ctx.signal.aborted) {
    const started = Date.now();
    const pending = probes.filter((p) => p.acceptedAtMs !== undefined && p.seenAtMs === undefined);
    if (pending.length > 0) {
      const rows = await ctx.ch
        .query<{ event_id: string }>(sql`SELECT event_id FROM events WHERE account_id = ${ctx.probeAccountId} AND event_id IN ${pending.map((p) => p.id)}`)
        .catch(() => []);
      const now = Date.now();
      const found = new Set(rows.map((r) => r.event_id));
      for (const p of pending) if (found.has(p.id)) p.seenAtMs = now;
    }
    await sleep(ctx.pollMs - (Date.now() - started), stop);
  }
}

async function reportProgress(ctx: FreshnessContext, probes: Probe[], load: ReturnType<typeof startLoad>, stop: AbortSignal): Promise<void> {
  let last = { atMs: Date.now(), accepted: load.counters().eventsAccepted };
  while (!stop.aborted && !ctx.signal.aborted) {
    await sleep(ctx.progressS * 1000, stop);
    if (stop.aborted) return;
    const now = Date.now();
    const accepted = load.counters().eventsAccepted;
    const seen = probes.filter((p) => p.seenAtMs !== undefined).map((p) => (p.seenAtMs ?? 0) - (p.acceptedAtMs ?? 0));
    const lag = await ctx.observer.lag.read();
    say(
      'freshness',
      `http ${n0((accepted - last.accepted) / ((now - last.atMs) / 1000))} ev/s | probes ${seen.length}/${probes.length} queryable, ` +
        `p50 ${n0(percentile(seen, 50))} ms, p99 ${n0(percentile(seen, 99))} ms | lag ${formatLag(lag)}`,
    );
    last = { atMs: now, accepted };
  }
}

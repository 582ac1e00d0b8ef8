/**
 * Phase 6, the soak: paced load at the end-to-end rate with lag flat for `--soak-duration`
 * (10 minutes by default), memory read every `--soak-interval`. Memory is flat when the
 * least-squares trend of each series over the second half grew by less than the tolerance:
 * gateway and processor RSS (memory.ts's RSS_TOLERANCE), and Redis besides the load account's
 * seen-id sets, which grow by design with every new id until their buckets are forgotten (15 to
 * 30 minutes: docs/billing.md) and are judged per id by the allowance phase. "Besides" is
 * Redis's own overhead (`used_memory_overhead`: clients, buffers, the key table) plus MEMORY
 * USAGE of every other key of the run, not `used_memory` minus the sets: MEMORY USAGE counts a
 * set's entries at their struct size, below what the allocator hands out (about 10 % of the sets
 * on 2026-11-29), so the difference grew with the very ids it meant to leave out.
 * A trend rather than two readings: a Node process's RSS moves by its young generation (64 MB
 * semi-spaces) from one reading to the next.
 *
 * The soak also tells whether the pipeline held the rate: the lag (dedupe plus storage) judged
 * over the whole soak by the search's own rule (search-plan.ts's judgeWindow: its trend grew by
 * less than 2 % of the events or half a second of load). A 20-second search step once called
 * 25,500 events/s flat that left 2 M events of lag after ten minutes (docs/benchmarks.md).
 */
import { seenKeys } from '@ingest/domain';
import { globEscape, type Redis, scanKeys } from '@ingest/platform';
import { redisInfo } from './environment.js';
import { diffCounters, type LoadCounters, type RequestSource, startLoad } from './load.js';
import type { HttpClient } from './http-client.js';
import { RSS_TOLERANCE } from './memory.js';
import { formatLag, type Observation, observe, type Observer } from './observe.js';
import { sleep } from './processes.js';
import { n0, n1, say } from './say.js';
import { type FlatVerdict, judgeWindow, MIN_ACHIEVED_SHARE } from './search-plan.js';

export interface SoakReading {
  /** Seconds from the first reading. */
  atS: number;
  eventsAccepted: number;
  rssMb: Record<string, number | undefined>;
  redisUsedMb?: number;
  /** Memory of the load account's seen-id sets (MEMORY USAGE of each). */
  redisSeenIdsMb?: number;
  /** Redis's overhead and the run's other keys (seenIdsAndTheRest). */
  redisBesidesSeenIdsMb?: number;
  lag: Record<string, number>;
}

/** One series judged: its trend over the second half, and what it may grow. */
export interface SoakSeries {
  name: string;
  middleMb?: number;
  endMb?: number;
  /** Least-squares slope over the second half times the second half's length. */
  trendMb?: number;
  allowedMb: number;
}

export interface SoakResult {
  targetEventsPerSec: number;
  seconds: number;
  achievedEventsPerSec: number;
  load: LoadCounters;
  readings: SoakReading[];
  series: SoakSeries[];
  /** Whether the lag stayed flat over the whole soak (the search's rule). */
  lag: FlatVerdict;
  verdict: { ok: boolean; problems: string[] };
}

/** Redis may grow this much, besides the seen ids, over the second half (its own allocations, the limiters' short-lived keys). */
export const REDIS_TOLERANCE = { share: 0.1, mb: 10 };

/** Least-squares slope of y over x (per unit of x); undefined with fewer than two distinct x. */
export function slope(points: readonly { x: number; y: number }[]): number | undefined {
  if (points.length < 2) return undefined;
  const mx = points.reduce((s, p) => s + p.x, 0) / points.length;
  const my = points.reduce((s, p) => s + p.y, 0) / points.length;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.x - mx) * (p.y - my);
    den += (p.x - mx) ** 2;
  }
  return den === 0 ? undefined : num / den;
}

/** The judged series of a soak's readings: gateway and processor RSS, Redis besides the seen ids. */
export function soakSeries(readings: readonly SoakReading[]): SoakSeries[] {
  const last = readings.at(-1);
  if (!last) return [];
  const half = last.atS / 2;
  const second = readings.filter((r) => r.atS >= half);
  const span = second.length > 0 ? last.atS - (second[0]?.atS ?? 0) : 0;
  const series = (name: string, value: (r: SoakReading) => number | undefined, tolerance: { share: number; mb: number }): SoakSeries => {
    const points = second.flatMap((r) => {
      const y = value(r);
      return y === undefined ? [] : [{ x: r.atS, y }];
    });
    const middleMb = points[0]?.y;
    const s = slope(points);
    return {
      name,
      middleMb,
      endMb: points.at(-1)?.y,
      trendMb: s === undefined ? undefined : s * span,
      allowedMb: Math.max(tolerance.mb, (middleMb ?? 0) * tolerance.share),
    };
  };
  return [
    series('gateway RSS', (r) => r.rssMb.gateway, RSS_TOLERANCE),
    series('processor RSS', (r) => r.rssMb.processor, RSS_TOLERANCE),
    series('Redis besides the seen ids', (r) => r.redisBesidesSeenIdsMb, REDIS_TOLERANCE),
  ];
}

/** The lag (dedupe plus storage, events) over the soak, judged as a search window is. */
export function soakLag(readings: readonly SoakReading[], accepted: number, targetEventsPerSec: number): FlatVerdict {
  const backlog = (r: SoakReading) => (r.lag.dedupe ?? 0) + (r.lag.storage ?? 0);
  const first = readings[0];
  const last = readings.at(-1);
  return judgeWindow({
    targetEventsPerSec,
    seconds: (last?.atS ?? 0) - (first?.atS ?? 0),
    accepted,
    backlogStart: first ? backlog(first) : 0,
    backlogEnd: last ? backlog(last) : 0,
    samples: readings.map((r) => ({ atMs: r.atS * 1000, backlog: backlog(r) })),
  });
}

export function judgeSoak(series: readonly SoakSeries[], achievedEventsPerSec: number, targetEventsPerSec: number, lag?: FlatVerdict): SoakResult['verdict'] {
  const problems: string[] = [];
  for (const s of series) {
    if (s.trendMb === undefined) problems.push(`${s.name}: too few readings in the second half`);
    else if (s.trendMb > s.allowedMb) problems.push(`${s.name} grew ${n0(s.trendMb)} MB over the second half (trend; allowed ${n0(s.allowedMb)})`);
  }
  // A rate not carried is said once, below (the lag's judgement then says the same); a lag that
  // grew at the rate asked for is its own problem.
  const carried = achievedEventsPerSec >= targetEventsPerSec * MIN_ACHIEVED_SHARE;
  if (lag && carried && !lag.flat) {
    problems.push(`the lag grew by ${n0(lag.growth)} events over the soak (trend; flat below ${n0(lag.allowed)}): the pipeline did not hold this rate`);
  }
  if (!carried) {
    problems.push(`the gateway accepted ${n0(achievedEventsPerSec)} events/s, below 95% of the ${n0(targetEventsPerSec)} asked for`);
  }
  return { ok: problems.length === 0, problems };
}

/**
 * Bytes of an account's seen-id sets (every key under its shard prefix, shard 0's included:
 * allowance.keys.ts), and of the rest: Redis's `used_memory_overhead` plus every other key of
 * the run's prefix. MEMORY USAGE of each key, pipelined.
 */
export async function seenIdsAndTheRest(redis: Redis, redisPrefix: string, accountId: string): Promise<{ seenIds: number; rest: number }> {
  const { shardPrefix } = seenKeys(accountId, redisPrefix);
  const keys = await scanKeys(redis, `${globEscape(redisPrefix)}*`);
  let seenIds = 0;
  let rest = (await redisInfo(redis, 'memory'))('used_memory_overhead');
  for (let i = 0; i < keys.length; i += 1_000) {
    const chunk = keys.slice(i, i + 1_000);
    const pipeline = redis.pipeline();
    for (const key of chunk) pipeline.call('MEMORY', 'USAGE', key);
    const answers = (await pipeline.exec()) ?? [];
    answers.forEach(([err, usage], j) => {
      if (err) return;
      if (chunk[j]?.startsWith(shardPrefix)) seenIds += Number(usage ?? 0);
      else rest += Number(usage ?? 0);
    });
  }
  return { seenIds, rest };
}

export interface SoakContext {
  observer: Observer;
  client: HttpClient;
  source: RequestSource;
  redis: Redis;
  redisPrefix: string;
  accountId: string;
  concurrency: number;
  eventsPerSecond: number;
  durationS: number;
  intervalS: number;
  signal: AbortSignal;
}

export async function runSoak(ctx: SoakContext): Promise<SoakResult> {
  const load = startLoad({ client: ctx.client, path: '/v1/events', concurrency: ctx.concurrency, source: ctx.source, eventsPerSecond: ctx.eventsPerSecond });
  const MB = 1024 * 1024;
  const readings: SoakReading[] = [];
  const read = async (): Promise<Observation> => {
    const [o, redis] = await Promise.all([observe(ctx.observer, load), seenIdsAndTheRest(ctx.redis, ctx.redisPrefix, ctx.accountId).catch(() => undefined)]);
    const atS = readings.length === 0 ? 0 : (o.atMs - startMs) / 1000;
    const reading: SoakReading = {
      atS,
      eventsAccepted: o.load.eventsAccepted,
      rssMb: Object.fromEntries(['gateway', 'processor'].map((name) => [name, (o.proc.memory[name]?.rssBytes ?? NaN) / MB])),
      redisUsedMb: o.redisUsedMemory === undefined ? undefined : o.redisUsedMemory / MB,
      redisSeenIdsMb: redis === undefined ? undefined : redis.seenIds / MB,
      redisBesidesSeenIdsMb: redis === undefined || !Number.isFinite(redis.rest) ? undefined : redis.rest / MB,
      lag: o.lag,
    };
    readings.push(reading);
    const previous = readings.at(-2);
    const rate = previous && reading.atS > previous.atS ? (reading.eventsAccepted - previous.eventsAccepted) / (reading.atS - previous.atS) : 0;
    say(
      'soak',
      `${n0(reading.atS).padStart(4)} s  http ${n0(rate)} ev/s | RSS gateway ${n0(reading.rssMb.gateway)} MB, processor ${n0(reading.rssMb.processor)} MB | ` +
        `Redis ${n1(reading.redisUsedMb)} MB (seen ids ${n1(reading.redisSeenIdsMb)}, besides them ${n1(reading.redisBesidesSeenIdsMb)}) | lag ${formatLag(reading.lag)}`,
    );
    return o;
  };
  let startMs = Date.now();
  try {
    say('soak', `paced load of ${n0(ctx.eventsPerSecond)} events/s for ${n0(ctx.durationS)} s, memory read every ${n0(ctx.intervalS)} s`);
    // The first interval settles the pace; the readings start after it.
    await sleep(ctx.intervalS * 1000, ctx.signal);
    startMs = Date.now();
    const start = await read();
    let end = start;
    while (Date.now() - startMs < ctx.durationS * 1000) {
      await sleep(Math.min(ctx.intervalS * 1000, startMs + ctx.durationS * 1000 - Date.now()), ctx.signal);
      ctx.signal.throwIfAborted();
      end = await read();
    }
    const seconds = (end.atMs - start.atMs) / 1000;
    const counted = diffCounters(start.load, end.load);
    const achievedEventsPerSec = counted.eventsAccepted / seconds;
    const series = soakSeries(readings);
    const lag = soakLag(readings, counted.eventsAccepted, ctx.eventsPerSecond);
    return {
      targetEventsPerSec: ctx.eventsPerSecond,
      seconds,
      achievedEventsPerSec,
      load: counted,
      readings,
      series,
      lag,
      verdict: judgeSoak(series, achievedEventsPerSec, ctx.eventsPerSecond, lag),
    };
  } finally {
    await load.stop();
  }
}

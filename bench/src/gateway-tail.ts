/**
 * Where the send -> 202 tail at half load comes from (issue 31 item 5): the gateway's own
 * readings over the freshness window, beside the load's 202 percentiles. The Kafka produce
 * histogram (acks=all, coalesced sends included) says how much of a request's time waits for the
 * broker; the GC histogram (prom-client's default metrics) how often the thread stopped for
 * 10 ms or more; the event loop lag p99 how late callbacks ran; the gateway's own request
 * duration histogram (from its reading of the request to its answer) whether the tail the load
 * sees is spent in the gateway at all.
 */
import type { Observation } from './observe.js';
import { delta, gaugeMs, histogramDelta, observations, ratioMs } from './prom.js';

export interface GatewayTail {
  /** POST /v1/events as the gateway timed it: upper bounds of the buckets holding p50 and p99. */
  server: { count: number; p50AtMostMs?: number; p99AtMostMs?: number };
  /** Sends to events.raw in the window, their mean and the upper bound of the bucket holding their p99. */
  produce: Timing;
  /** Pauses of 10 ms or more and of 100 ms or more, per kind (major, minor, incremental, weakcb). */
  gcPausesOver10Ms: Record<string, number>;
  gcPausesOver100Ms: Record<string, number>;
  /** Share of the window the thread spent in GC. */
  gcShare: number;
  eventLoopLagP99Ms?: number;
  /** The Redis calls of a request (ingest_redis_command_duration_seconds), by script: count, mean, p99 bucket. */
  redis?: Record<string, Timing>;
}

/** Observations of a duration histogram over the window: how many, their mean, the upper bound of the bucket holding their p99. */
export interface Timing {
  count: number;
  meanMs?: number;
  p99AtMostMs?: number;
}

/**
 * The Redis calls of a POST /v1/events, in the order it makes them: the per-address limit, then
 * the per-account ceilings and the allowance in one script (admit_and_reserve_events), or, in a
 * build before that (or a Redis user without its grant), in two.
 */
export const REQUEST_REDIS_SCRIPTS = ['rate_limit_address', 'admit_and_reserve_events', 'account_rate_limits', 'allowance_reserve_events'] as const;

const GC = 'nodejs_gc_duration_seconds';
const PRODUCE = 'ingest_kafka_produce_duration_seconds';
const REQUEST = 'ingest_http_request_duration_seconds';
const REDIS = 'ingest_redis_command_duration_seconds';

export function gatewayTail(start: Observation, end: Observation): GatewayTail {
  const seconds = (end.atMs - start.atMs) / 1000;
  const over = (threshold: number) => {
    const out: Record<string, number> = {};
    for (const kind of ['major', 'minor', 'incremental', 'weakcb']) {
      const buckets = histogramDelta(start.gateway, end.gateway, GC, { kind });
      // A bucket whose lower bound is at or above the threshold: everything in it paused that long.
      let lower = 0;
      let n = 0;
      for (const [le, c] of buckets) {
        if (lower >= threshold) n += c;
        lower = le === '+Inf' ? Infinity : Number(le);
      }
      if (n > 0) out[kind] = n;
    }
    return out;
  };
  const lag = gaugeMs(end.gateway, 'nodejs_eventloop_lag_p99_seconds');
  const requests = histogramDelta(start.gateway, end.gateway, REQUEST, { method: 'POST', route: '/v1/events' });
  const served = observations(requests);
  const redis: NonNullable<GatewayTail['redis']> = {};
  for (const script of REQUEST_REDIS_SCRIPTS) redis[script] = timing(start, end, REDIS, { command: 'evalsha', script });
  return {
    server: { count: served, ...(served > 0 ? { p50AtMostMs: bucketQuantile(requests, 0.5), p99AtMostMs: bucketQuantile(requests, 0.99) } : {}) },
    produce: timing(start, end, PRODUCE, { topic: 'events.raw' }),
    gcPausesOver10Ms: over(0.01),
    gcPausesOver100Ms: over(0.1),
    gcShare: seconds > 0 ? delta(start.gateway, end.gateway, `${GC}_sum`) / seconds : 0,
    ...(lag === undefined ? {} : { eventLoopLagP99Ms: lag }),
    redis,
  };
}

function timing(start: Observation, end: Observation, name: string, filter: Record<string, string>): Timing {
  const buckets = histogramDelta(start.gateway, end.gateway, name, filter);
  const count = observations(buckets);
  if (count === 0) return { count };
  return { count, meanMs: ratioMs(delta(start.gateway, end.gateway, `${name}_sum`, filter), count), p99AtMostMs: bucketQuantile(buckets, 0.99) };
}

/** The upper bound (ms) of the bucket in which the q-quantile falls; undefined past the last finite bound. */
export function bucketQuantile(buckets: [string, number][], q: number): number | undefined {
  const total = observations(buckets);
  let seen = 0;
  for (const [le, c] of buckets) {
    seen += c;
    if (seen >= q * total) return le === '+Inf' ? undefined : Number(le) * 1000;
  }
  return undefined;
}

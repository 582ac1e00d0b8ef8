import { describe, expect, it } from 'vitest';
import { bucketQuantile, gatewayTail } from './gateway-tail.js';
import type { Observation } from './observe.js';
import { parsePrometheus } from './prom.js';

/** A cumulative histogram in Prometheus text for the bounds and counts given (counts per bucket). */
function histogram(name: string, labels: string, bounds: number[], counts: number[], sumSeconds: number): string {
  let cumulative = 0;
  const lines = bounds.map((le, i) => {
    cumulative += counts[i] ?? 0;
    return `${name}_bucket{${labels}le="${le}"} ${cumulative}`;
  });
  cumulative += counts[bounds.length] ?? 0;
  lines.push(
    `${name}_bucket{${labels}le="+Inf"} ${cumulative}`,
    `${name}_sum{${labels.replace(/,$/, '')}} ${sumSeconds}`,
    `${name}_count{${labels.replace(/,$/, '')}} ${cumulative}`,
  );
  return lines.join('\n');
}

const GC_BOUNDS = [0.001, 0.01, 0.1, 1, 2, 5];
const PRODUCE_BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

function observation(atMs: number, text: string): Observation {
  return { atMs, gateway: parsePrometheus(text), processor: [], rows: 0, lag: {}, load: {} as Observation['load'], proc: {} as Observation['proc'] };
}

describe('the gateway tail at half load', () => {
  it('reads produce times, GC pauses by length and kind, the GC share and the loop lag over the window', () => {
    const start = observation(
      0,
      [
        histogram('ingest_kafka_produce_duration_seconds', 'topic="events.raw",', PRODUCE_BOUNDS, [0, 10, 0], 0.02),
        histogram('nodejs_gc_duration_seconds', 'kind="minor",', GC_BOUNDS, [50, 5, 0], 0.1),
        histogram('nodejs_gc_duration_seconds', 'kind="major",', GC_BOUNDS, [0, 1, 0], 0.005),
      ].join('\n'),
    );
    const end = observation(
      10_000,
      [
        // 100 more sends: 97 within 2.5 ms, 2 in (25, 50] ms, 1 in (100, 250] ms.
        histogram('ingest_kafka_produce_duration_seconds', 'topic="events.raw",', PRODUCE_BOUNDS, [0, 107, 0, 0, 0, 2, 0, 1], 0.02 + 0.5),
        // 20 more minor pauses under 10 ms and 3 of 10-100 ms; 2 major ones of 10-100 ms and 1 of 100 ms-1 s.
        histogram('nodejs_gc_duration_seconds', 'kind="minor",', GC_BOUNDS, [60, 15, 3], 0.1 + 0.3),
        histogram('nodejs_gc_duration_seconds', 'kind="major",', GC_BOUNDS, [0, 1, 2, 1], 0.005 + 0.3),
        'nodejs_eventloop_lag_p99_seconds 0.042',
        // 200 requests: 188 within 10 ms, 8 in (10, 25] ms, 4 in (100, 250] ms: the 198th is in the last.
        histogram(
          'ingest_http_request_duration_seconds',
          'method="POST",route="/v1/events",',
          [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
          [0, 50, 138, 8, 0, 0, 4],
          1,
        ),
      ].join('\n'),
    );
    const tail = gatewayTail(start, end);
    expect(tail.server).toEqual({ count: 200, p50AtMostMs: 10, p99AtMostMs: 250 });
    expect(tail.produce.count).toBe(100);
    expect(tail.produce.meanMs).toBeCloseTo(5, 6);
    expect(tail.produce.p99AtMostMs).toBe(50);
    expect(tail.gcPausesOver10Ms).toEqual({ minor: 3, major: 3 });
    expect(tail.gcPausesOver100Ms).toEqual({ major: 1 });
    expect(tail.gcShare).toBeCloseTo(0.06, 6);
    expect(tail.eventLoopLagP99Ms).toBeCloseTo(42, 6);
  });

  it('reads the Redis calls of a request by script, and says none were seen for a script absent from the scrape', () => {
    const bounds = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1];
    const start = observation(
      0,
      histogram('ingest_redis_command_duration_seconds', 'command="evalsha",script="allowance_reserve_events",', bounds, [0, 5], 0.004),
    );
    const end = observation(
      10_000,
      [
        // 100 more: 90 within 1 ms, 9 in (2.5, 5] ms, 1 in (50, 100] ms; 0.3 s more in all.
        histogram('ingest_redis_command_duration_seconds', 'command="evalsha",script="allowance_reserve_events",', bounds, [0, 95, 0, 9, 0, 0, 0, 1], 0.304),
        // A GET with the same script label would be another command: not counted.
        histogram('ingest_redis_command_duration_seconds', 'command="get",script="",', bounds, [7], 0.001),
        histogram('ingest_redis_command_duration_seconds', 'command="evalsha",script="rate_limit_address",', bounds, [40], 0.01),
      ].join('\n'),
    );
    const { redis } = gatewayTail(start, end);
    expect(redis?.allowance_reserve_events?.count).toBe(100);
    expect(redis?.allowance_reserve_events?.meanMs).toBeCloseTo(3, 6);
    expect(redis?.allowance_reserve_events?.p99AtMostMs).toBe(5);
    expect(redis?.rate_limit_address).toMatchObject({ count: 40, p99AtMostMs: 0.5 });
    expect(redis?.account_rate_limits).toEqual({ count: 0 });
    expect(redis?.admit_and_reserve_events).toEqual({ count: 0 });
  });

  it('places a quantile in the bucket that holds it, and past the last bound nowhere', () => {
    expect(
      bucketQuantile(
        [
          ['0.01', 98],
          ['0.1', 1],
          ['+Inf', 1],
        ],
        0.99,
      ),
    ).toBe(100);
    expect(
      bucketQuantile(
        [
          ['0.01', 98],
          ['0.1', 1],
          ['+Inf', 1],
        ],
        0.5,
      ),
    ).toBe(10);
    expect(
      bucketQuantile(
        [
          ['0.01', 1],
          ['+Inf', 99],
        ],
        0.99,
      ),
    ).toBeUndefined();
  });
});

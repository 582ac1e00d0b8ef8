/**
 * HTTP load: `concurrency` closed loops, each sending one request and waiting for its answer,
 * optionally paced to a target number of events per second. Counters are cumulative; a phase
 * takes two snapshots and reports the difference.
 */
import { setMaxListeners } from 'node:events';
import type { BodyFactory } from './events.js';
import type { HttpClient } from './http-client.js';
import { sleep } from './processes.js';

export interface LoadCounters {
  requests: number;
  /** Responses by status code; 0 counts requests that failed without a response. */
  byStatus: Record<number, number>;
  /** Events sent in the requests answered with each status code. */
  eventsByStatus: Record<number, number>;
  eventsSent: number;
  /** Sum of `accepted` of the 202 answers. */
  eventsAccepted: number;
  /** Sum of `rejected` of the 202 answers (e.g. quota_exceeded). */
  eventsRejected: number;
  /**
   * Of eventsAccepted, those of requests sent again with the same ids (a client's retry): the
   * gateway accepts and writes them again, the processor's dedupe drops them.
   */
  eventsAcceptedRepeated: number;
}

/** Accepted events that should each become a row: the retries' second copies are not. */
export function acceptedToStore(c: LoadCounters): number {
  return c.eventsAccepted - c.eventsAcceptedRepeated;
}

export interface LoadGenerator {
  counters(): LoadCounters;
  /** Response times (ms) of requests that ended at or after `sinceMs` (epoch ms); only those answered `status` when given. */
  latenciesSince(sinceMs: number, untilMs?: number, status?: number): number[];
  stop(): Promise<void>;
}

/** One request of the load: its body, how many events it carries and whose key sends it. */
export interface OutgoingRequest {
  body: string;
  events: number;
  apiKey: string;
  /** The same body sent before (a retry): its accepted events are not new rows. */
  repeat?: boolean;
}

/** What the load sends, one request after another (the single account's or the tenant mix's). */
export interface RequestSource {
  next(): OutgoingRequest;
  /** Mean events per request (the search's rate step). */
  readonly meanEventsPerRequest: number;
}

/** `eventsPerRequest` events with unique ids in every request, all from one account's key. */
export function singleAccountSource(bodies: BodyFactory, apiKey: string, eventsPerRequest: number): RequestSource {
  return {
    meanEventsPerRequest: eventsPerRequest,
    next: () => ({ ...bodies.body(eventsPerRequest), apiKey }),
  };
}

export interface LoadOptions {
  client: HttpClient;
  path: string;
  concurrency: number;
  source: RequestSource;
  /** Paced to this many events per second; undefined: as fast as the server answers. */
  eventsPerSecond?: number;
}

const MAX_LATENCY_SAMPLES = 2_000_000;

export function startLoad(options: LoadOptions): LoadGenerator {
  const counters: LoadCounters = {
    requests: 0,
    byStatus: {},
    eventsByStatus: {},
    eventsSent: 0,
    eventsAccepted: 0,
    eventsRejected: 0,
    eventsAcceptedRepeated: 0,
  };
  const endedAt: number[] = [];
  const latency: number[] = [];
  const statuses: number[] = [];
  const stopper = new AbortController();
  // Every paced worker waits on this signal at once.
  setMaxListeners(0, stopper.signal);
  const pace = options.eventsPerSecond ? createPacer(options.eventsPerSecond) : undefined;

  async function worker(): Promise<void> {
    while (!stopper.signal.aborted) {
      const { body, events, apiKey, repeat } = options.source.next();
      if (pace) await pace(events, stopper.signal);
      if (stopper.signal.aborted) return;
      const started = performance.now();
      let status: number;
      try {
        const res = await options.client.request('POST', options.path, { body, headers: { authorization: `Bearer ${apiKey}` } });
        status = res.status;
        if (status === 202) {
          const receipt = JSON.parse(res.body) as { accepted?: number; rejected?: number };
          counters.eventsAccepted += receipt.accepted ?? 0;
          if (repeat) counters.eventsAcceptedRepeated += receipt.accepted ?? 0;
          counters.eventsRejected += receipt.rejected ?? 0;
        }
      } catch {
        status = 0;
      }
      counters.requests++;
      counters.eventsSent += events;
      counters.byStatus[status] = (counters.byStatus[status] ?? 0) + 1;
      counters.eventsByStatus[status] = (counters.eventsByStatus[status] ?? 0) + events;
      if (latency.length < MAX_LATENCY_SAMPLES) {
        latency.push(performance.now() - started);
        endedAt.push(Date.now());
        statuses.push(status);
      }
      // A refusal or a failed connection must not turn into a hot loop.
      if (status === 0 || status === 429 || status === 503) await sleep(100, stopper.signal);
    }
  }

  const workers = Array.from({ length: options.concurrency }, () => worker());
  return {
    counters: () => ({ ...counters, byStatus: { ...counters.byStatus }, eventsByStatus: { ...counters.eventsByStatus } }),
    latenciesSince(sinceMs, untilMs = Infinity, status) {
      const out: number[] = [];
      for (let i = 0; i < latency.length; i++) {
        const t = endedAt[i] ?? 0;
        if (t >= sinceMs && t < untilMs && (status === undefined || statuses[i] === status)) out.push(latency[i] ?? 0);
      }
      return out;
    },
    async stop() {
      stopper.abort();
      await Promise.all(workers);
    },
  };
}

/**
 * A shared schedule of request start times at `eventsPerSecond`: a request of n events takes n
 * events' share of the schedule, so requests of mixed sizes keep the rate in events. When the
 * server falls behind the schedule by more than a second the schedule restarts from now instead
 * of bursting.
 */
function createPacer(eventsPerSecond: number): (events: number, signal: AbortSignal) => Promise<void> {
  const msPerEvent = 1000 / eventsPerSecond;
  let next = performance.now();
  return async (events, signal) => {
    const now = performance.now();
    if (next < now - 1000) next = now;
    const at = next;
    next += events * msPerEvent;
    if (at > now) await sleep(at - now, signal);
  };
}

export function diffCounters(before: LoadCounters, after: LoadCounters): LoadCounters {
  const byStatus: Record<number, number> = {};
  for (const [code, n] of Object.entries(after.byStatus)) byStatus[Number(code)] = n - (before.byStatus[Number(code)] ?? 0);
  const eventsByStatus: Record<number, number> = {};
  for (const [code, n] of Object.entries(after.eventsByStatus)) eventsByStatus[Number(code)] = n - (before.eventsByStatus[Number(code)] ?? 0);
  return {
    requests: after.requests - before.requests,
    byStatus,
    eventsByStatus,
    eventsSent: after.eventsSent - before.eventsSent,
    eventsAccepted: after.eventsAccepted - before.eventsAccepted,
    eventsRejected: after.eventsRejected - before.eventsRejected,
    eventsAcceptedRepeated: after.eventsAcceptedRepeated - before.eventsAcceptedRepeated,
  };
}

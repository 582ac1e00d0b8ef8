/**
 * Load through the real gateway app (fastify inject): POST /v1/events in requests of up to 100
 * events, POST /v1/events/bulk, GET /v1/jobs/{id}. Every request comes from a fresh client
 * address, so the per-address rate limit never throttles the test.
 */
import type { JobStatus } from '@ingest/schemas';
import type { FastifyInstance } from 'fastify';
import { randomClientIp } from '../gateway/gateway.fixture.js';

export interface ApiClient {
  app: FastifyInstance;
  apiKey: string;
}

export interface LoadStats {
  requests: number;
  events: number;
  /** 503s retried with the same eventIds (safe: the retry contract of docs/api.md). */
  retried: number;
}

export function newStats(): LoadStats {
  return { requests: 0, events: 0, retried: 0 };
}

const headers = (apiKey: string) => ({ authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' });

/** POST /v1/events; every event must be accepted (202, accepted = events.length). */
export async function postEvents(client: ApiClient, events: readonly object[], stats: LoadStats): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const res = await client.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: headers(client.apiKey),
      payload: { events },
      remoteAddress: randomClientIp(),
    });
    if (res.statusCode === 503 && attempt < 5) {
      stats.retried++;
      continue;
    }
    const body = res.json<{ accepted?: number }>();
    if (res.statusCode !== 202 || body.accepted !== events.length) {
      throw new Error(`POST /v1/events answered ${res.statusCode} accepted=${body.accepted} of ${events.length}: ${res.body.slice(0, 500)}`);
    }
    stats.requests++;
    stats.events += events.length;
    return;
  }
}

/** POST /v1/events/bulk; resolves the job id. */
export async function postBulk(client: ApiClient, events: readonly object[]): Promise<string> {
  const res = await client.app.inject({
    method: 'POST',
    url: '/v1/events/bulk',
    headers: headers(client.apiKey),
    payload: { events },
    remoteAddress: randomClientIp(),
  });
  if (res.statusCode !== 202) throw new Error(`POST /v1/events/bulk answered ${res.statusCode}: ${res.body.slice(0, 500)}`);
  return res.json<{ jobId: string }>().jobId;
}

export async function jobStatus(client: ApiClient, jobId: string): Promise<JobStatus> {
  const res = await client.app.inject({
    method: 'GET',
    url: `/v1/jobs/${jobId}`,
    headers: { authorization: `Bearer ${client.apiKey}` },
    remoteAddress: randomClientIp(),
  });
  if (res.statusCode !== 200) throw new Error(`GET /v1/jobs/${jobId} answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
  return res.json<JobStatus>();
}

export interface PoolOptions {
  /** Requests in flight at most. */
  concurrency: number;
  /**
   * Starts at most this many items per second. Load shaping, not waiting for a result: it
   * stretches a stream that would otherwise be over in seconds so that kills and restarts,
   * which take seconds each, land in the middle of it.
   */
  perSecond?: number;
}

/**
 * Runs `work` for every item, at most `concurrency` in flight; `onProgress` sees the number of
 * items finished so far. The first failure stops new work and rejects.
 */
export async function runPool<T>(
  items: readonly T[],
  options: PoolOptions,
  work: (item: T) => Promise<void>,
  onProgress?: (done: number) => void,
): Promise<void> {
  const started = Date.now();
  let next = 0;
  let done = 0;
  let failed = false;
  const lane = async () => {
    while (!failed && next < items.length) {
      const index = next++;
      if (options.perSecond) {
        const due = started + (index * 1000) / options.perSecond;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      }
      try {
        await work(items[index] as T);
      } catch (err) {
        failed = true;
        throw err;
      }
      onProgress?.(++done);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency, items.length) }, lane));
}

/** Splits into requests of at most `size` events, never separating the events of one group. */
export function toRequests<T>(groups: readonly (readonly T[])[], size: number): T[][] {
  const requests: T[][] = [];
  let current: T[] = [];
  for (const group of groups) {
    if (current.length + group.length > size) {
      requests.push(current);
      current = [];
    }
    current.push(...group);
  }
  if (current.length > 0) requests.push(current);
  return requests;
}

/** A valid event with a caller-chosen id; no timestamp, so the time of receipt is used. */
export function testEvent(eventId: string, n: number): { eventName: string; email: string; eventId: string; properties: { n: number } } {
  return { eventName: n % 3 === 0 ? 'Page Viewed' : 'Feature Used', email: `user${n % 5_000}@example.com`, eventId, properties: { n } };
}

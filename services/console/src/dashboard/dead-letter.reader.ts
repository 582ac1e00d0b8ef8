import { type DeadLetterEntry, deadLetterAccountId, type KafkaClient, METRIC_NAMES, readDeadLetters, type Registry, sharedCounter } from '@ingest/platform';
import { setTimeout as sleep } from 'node:timers/promises';
import { ProblemError } from '@ingest/http';

export type DeadLetterTopic = 'events' | 'crm';

export interface DeadLetterReaderOptions<V> {
  /** What is kept of a letter for the list (small: never the letter's value, which can be megabytes). */
  view(which: DeadLetterTopic, entry: DeadLetterEntry): V;
  kafka: KafkaClient;
  topics: Record<DeadLetterTopic, string>;
  metrics: Registry;
  /** Entries listed per topic, plus one to know whether there are more. */
  limit: number;
  /** Which end of the topic a list keeps when an account has more than `limit` letters (default the oldest). */
  keep?: 'oldest' | 'newest';
  /** How long an account's list is served from memory. */
  cacheMs?: number;
  /** A refresh (fresh: true) waits until this long after the account's previous scan began. */
  minScanIntervalMs?: number;
  /** Scans of the topics running at once, all accounts together... */
  maxConcurrentScans?: number;
  /** ...and waiting for their turn; beyond that the dashboard is told to retry (503). */
  maxWaitingScans?: number;
  /** Accounts whose lists are kept. */
  maxCachedLists?: number;
  now?: () => number;
  timeoutMs?: number;
  /** How a topic is read (tests count and hold the scans). */
  read?: typeof readDeadLetters;
}

export interface DeadLetterReader<V> {
  /**
   * The account's letters of one topic (at most limit + 1), as views: from the cache while it is
   * young, or, with `fresh` (the dashboard's Refresh), from a scan begun after the call.
   */
  list(which: DeadLetterTopic, accountId: string, options?: { fresh?: boolean }): Promise<V[]>;
  /** One letter of the account by position, read fresh (for a replay). */
  find(which: DeadLetterTopic, accountId: string, position: (e: DeadLetterEntry) => boolean): Promise<DeadLetterEntry | undefined>;
}

/**
 * Every dashboard listing of dead letters scanned both dead-letter topics from their start
 * under two new throwaway consumer groups, so a tab reloaded in a loop (or many owners at once)
 * made the broker create and track groups without end and read the topics again each time.
 * Here an account's list is kept for `cacheMs` (its own letters only: the same entries every
 * replica would read), concurrent requests for it share one scan, an explicit refresh starts a
 * new scan at most once per `minScanIntervalMs` per account (later refreshes wait for it), and
 * scans of all accounts run at most `maxConcurrentScans` at a time with a bounded queue behind.
 */
export function createDeadLetterReader<V>(options: DeadLetterReaderOptions<V>): DeadLetterReader<V> {
  const now = options.now ?? Date.now;
  const cacheMs = options.cacheMs ?? 10_000;
  const maxRunning = options.maxConcurrentScans ?? 2;
  const maxWaiting = options.maxWaitingScans ?? 16;
  const maxCached = options.maxCachedLists ?? 1_000;
  const scans = sharedCounter(options.metrics, {
    name: METRIC_NAMES.dashboardDeadLetterScans,
    help: 'Scans of a dead-letter topic made for the dashboard (each one a throwaway consumer group)',
    labelNames: ['topic'],
  });
  const minInterval = options.minScanIntervalMs ?? 1_000;
  const cache = new Map<string, { atMs: number; views: V[] }>();
  const inFlight = new Map<string, { startedAt: number; views: Promise<V[]> }>();
  /** A refresh waiting for the account's next scan: later refreshes share it. */
  const nextScan = new Map<string, Promise<V[]>>();
  const lastStart = new Map<string, number>();
  let running = 0;
  const waiting: (() => void)[] = [];

  async function scan(which: DeadLetterTopic, filter: (e: DeadLetterEntry) => boolean): Promise<DeadLetterEntry[]> {
    if (running >= maxRunning) {
      if (waiting.length >= maxWaiting) {
        throw new ProblemError('unavailable', 'Dead letters are being read for many requests; retry shortly.', { headers: { 'retry-after': '5' } });
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    } else {
      running += 1;
    }
    try {
      scans.inc({ topic: which });
      return await (options.read ?? readDeadLetters)(options.kafka, options.topics[which], {
        limit: options.limit,
        ...(options.keep ? { keep: options.keep } : {}),
        filter,
        timeoutMs: options.timeoutMs ?? 15_000,
      });
    } finally {
      // The slot passes straight to the next waiter, if any.
      const next = waiting.shift();
      if (next) next();
      else running -= 1;
    }
  }

  function startScan(key: string, which: DeadLetterTopic, accountId: string): Promise<V[]> {
    const startedAt = now();
    lastStart.delete(key);
    lastStart.set(key, startedAt);
    const views = scan(which, (e) => deadLetterAccountId(e) === accountId)
      .then((entries) => {
        const list = entries.map((e) => options.view(which, e));
        cache.delete(key);
        cache.set(key, { atMs: startedAt, views: list });
        // Oldest first out: a Map keeps insertion order.
        for (const map of [cache, lastStart]) {
          for (const old of map.keys()) {
            if (map.size <= maxCached) break;
            map.delete(old);
          }
        }
        return list;
      })
      .finally(() => {
        if (inFlight.get(key)?.views === views) inFlight.delete(key);
      });
    inFlight.set(key, { startedAt, views });
    return views;
  }

  return {
    list(which, accountId, { fresh = false } = {}) {
      const key = `${which}\u0000${accountId}`;
      const asked = now();
      const cached = cache.get(key);
      if (!fresh && cached && asked - cached.atMs < cacheMs) return Promise.resolve(cached.views);
      const pending = inFlight.get(key);
      if (pending && (!fresh || pending.startedAt >= asked)) return pending.views;
      if (!fresh) return startScan(key, which, accountId);
      // A refresh wants a scan begun after it asked; one per interval per account, shared.
      let next = nextScan.get(key);
      if (!next) {
        next = (async () => {
          await pending?.views.catch(() => undefined);
          const wait = (lastStart.get(key) ?? Number.NEGATIVE_INFINITY) + minInterval - now();
          if (wait > 0) await sleep(wait);
          nextScan.delete(key);
          return startScan(key, which, accountId);
        })();
        nextScan.set(key, next);
      }
      return next;
    },
    async find(which, accountId, position) {
      const [entry] = await scan(which, (e) => deadLetterAccountId(e) === accountId && position(e));
      return entry;
    },
  };
}

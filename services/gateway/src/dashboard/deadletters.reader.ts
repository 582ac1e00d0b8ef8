import { type DeadLetterEntry, deadLetterAccountId, type KafkaClient, METRIC_NAMES, readDeadLetters, type Registry, sharedCounter } from '@ingest/shared';
import { ProblemError } from '../http/problem.js';

export type DeadLetterTopic = 'events' | 'crm';

export interface DeadLetterReaderOptions<V> {
  /** What is kept of a letter for the list (small: never the letter's value, which can be megabytes). */
  view(which: DeadLetterTopic, entry: DeadLetterEntry): V;
  kafka: KafkaClient;
  topics: Record<DeadLetterTopic, string>;
  metrics: Registry;
  /** Entries listed per topic, plus one to know whether there are more. */
  limit: number;
  /** How long an account's list is served from memory. */
  cacheMs?: number;
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
  /** The account's letters of one topic (at most limit + 1), as views, from the cache when it is fresh. */
  list(which: DeadLetterTopic, accountId: string): Promise<V[]>;
  /** One letter of the account by position, read fresh (for a replay). */
  find(which: DeadLetterTopic, accountId: string, position: (e: DeadLetterEntry) => boolean): Promise<DeadLetterEntry | undefined>;
}

/**
 * Every dashboard listing of dead letters scanned both dead-letter topics from their start
 * under two new throwaway consumer groups, so a tab reloaded in a loop (or many owners at once)
 * made the broker create and track groups without end and read the topics again each time.
 * Here an account's list is kept for `cacheMs` (its own letters only: the same entries every
 * replica would read), concurrent requests for it share one scan, and scans of all accounts
 * run at most `maxConcurrentScans` at a time with a bounded queue behind them.
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
  const cache = new Map<string, { atMs: number; views: V[] }>();
  const inFlight = new Map<string, Promise<V[]>>();
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

  return {
    list(which, accountId) {
      const key = `${which}\u0000${accountId}`;
      const cached = cache.get(key);
      if (cached && now() - cached.atMs < cacheMs) return Promise.resolve(cached.views);
      const pending = inFlight.get(key);
      if (pending) return pending;
      const read = scan(which, (e) => deadLetterAccountId(e) === accountId)
        .then((entries) => {
          const views = entries.map((e) => options.view(which, e));
          cache.delete(key);
          cache.set(key, { atMs: now(), views });
          // Oldest first out: a Map keeps insertion order.
          for (const old of cache.keys()) {
            if (cache.size <= maxCached) break;
            cache.delete(old);
          }
          return views;
        })
        .finally(() => inFlight.delete(key));
      inFlight.set(key, read);
      return read;
    },
    async find(which, accountId, position) {
      const [entry] = await scan(which, (e) => deadLetterAccountId(e) === accountId && position(e));
      return entry;
    },
  };
}

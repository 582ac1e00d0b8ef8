import type { CrmAdapter } from '../adapters/adapter.js';
import { createAccountRateLimiter } from '../rate/account-limiter.js';
import { type AccountCaller, createAccountCaller } from '../retry/crm-call.retry.js';
import type { AccountFlush } from './coalescer.js';
import type { PendingEvent, SyncEngineDeps, SyncRuntime } from './sync-engine.deps.js';

/**
 * The sync engine's state per account on this replica: its CRM caller (rate limit, retries,
 * hold), its queue of flushes, its adapter, and the chains that keep its park writes and its
 * flushes one at a time. Made on the account's first event and kept for the engine's life.
 */
export interface AccountWorker {
  caller: AccountCaller;
  queue: AccountFlush<PendingEvent>[];
  running?: Promise<void>;
  adapter?: { ref: string; adapter: CrmAdapter };
  /** >0 while this replica parks the account: its flushes and checked events go to the park too. */
  parking: number;
  /** Bumped when this replica parks the account, so a submit that checked before knows. */
  epoch: number;
  /** This replica's park writes of the account, one after another (their order is the park's). */
  parkChain: Promise<unknown>;
  /** Flushes of the account, direct and resumed, one at a time on this replica. */
  lock: Promise<unknown>;
  /** This replica last found the account suspended (for the log's transitions only). */
  held: boolean;
}

export interface AccountWorkers {
  of(accountId: string): AccountWorker;
  all(): AccountWorker[];
  /** The account is suspended and its sync is held (only with parking); logs when this replica sees that change. */
  suspended(accountId: string, w: AccountWorker): boolean;
}

/** Runs `work` after the worker's previous work of the same kind; a failure does not stop the chain. */
export function chained<T>(w: AccountWorker, key: 'parkChain' | 'lock', work: () => Promise<T>): Promise<T> {
  const run = w[key].then(work);
  w[key] = run.catch(() => undefined);
  return run;
}

export function createAccountWorkers(
  deps: Pick<SyncEngineDeps, 'rate' | 'retry' | 'tokenBucketOf' | 'parking' | 'accountSuspended' | 'metrics'>,
  { log, now }: Pick<SyncRuntime, 'log' | 'now'>,
): AccountWorkers {
  const workers = new Map<string, AccountWorker>();
  const { parking } = deps;
  return {
    of(accountId) {
      let w = workers.get(accountId);
      if (!w) {
        w = {
          queue: [],
          parking: 0,
          epoch: 0,
          parkChain: Promise.resolve(),
          lock: Promise.resolve(),
          held: false,
          caller: createAccountCaller({
            limiter: createAccountRateLimiter({ rate: deps.rate, ...(deps.tokenBucketOf ? { takeToken: deps.tokenBucketOf(accountId) } : {}), now }),
            retry: deps.retry,
            ...(parking ? { hold: parking.hold } : {}),
            now,
            events: {
              onRetry: (kind) => deps.metrics.retries.inc({ kind }),
              onPause: (paused) => {
                if (paused) deps.metrics.pausedAccounts.inc();
                else deps.metrics.pausedAccounts.dec();
                if (paused) log.warn({ accountId }, 'CRM rate limit: account paused until Retry-After');
              },
            },
          }),
        };
        workers.set(accountId, w);
      }
      return w;
    },
    all: () => [...workers.values()],
    suspended(accountId, w) {
      const held = parking !== undefined && deps.accountSuspended?.(accountId) === true;
      if (held !== w.held) {
        w.held = held;
        if (held) log.warn({ accountId }, 'account suspended: its CRM sync is paused, its events are held in the park');
        else log.info({ accountId }, 'account no longer suspended: its CRM sync continues');
      }
      return held;
    },
  };
}

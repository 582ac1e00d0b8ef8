import { setTimeout as sleep } from 'node:timers/promises';
import type { ConsumedMessage, DeadLetterSink, Logger } from '@ingest/platform';
import type { SyncStateStore } from '@ingest/domain';
import { fullJitterDelayMs, infraRetryDelayMs } from '../retry/backoff.js';
import type { AccountBlocked, HoldPolicy } from '../retry/crm-call.retry.js';
import type { SyncMetrics } from '../sync/sync.metrics.js';
import type { ParkStore } from './park.store.js';

/**
 * How the sync engine parks a blocked account's events: the operator's settings, the delay
 * before the next try, and writing events to the park (dead-lettering what is over a cap). The
 * engine decides when; this module does the writing, with retries on Redis trouble so that no
 * event is dropped from memory unparked (an event is finished — its offset may be committed —
 * only once it is parked or dead-lettered).
 */
export interface ParkingSettings {
  store: ParkStore;
  hold: HoldPolicy;
  /** Parked events older than this are dead-lettered (crm_retries_exhausted). */
  maxAgeMs: number;
  /** Delays between tries of a parked account: full jitter from `baseDelayMs`, at most `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** After a hanging call, no try before this (the HTTP client's whole-call timeout), so the abandoned call has ended. */
  hangingDelayMs: number;
  /** How often each replica looks for due accounts, and how many events one resume step takes. */
  pollMs: number;
  resumeBatch: number;
  /** A replica's hold on resuming one account; renewed after every step. */
  leaseMs: number;
}

/** What parking needs of a pending event: its message, and how to finish it. */
export interface ParkableEvent {
  accountId: string;
  eventId: string;
  sink: { message: ConsumedMessage; finish(): void };
}

export function parkDelayMs(settings: ParkingSettings, blocked: AccountBlocked, attempt: number, random: () => number = Math.random): number {
  const backoff = fullJitterDelayMs(attempt, { baseMs: settings.baseDelayMs, capMs: settings.maxDelayMs }, random);
  const floor = blocked.why === 'hanging' ? settings.hangingDelayMs : blocked.retryAfterMs;
  return Math.max(floor, backoff, 1);
}

export interface ParkWriterDeps {
  settings: ParkingSettings;
  deadLetters: DeadLetterSink;
  syncStates: SyncStateStore;
  metrics: SyncMetrics;
  logger: Logger;
  signal: AbortSignal;
  now: () => number;
}

/**
 * Parks `events` (in this order) behind the account's parked events. Without `force` only if
 * the account has parked events; returns false (nothing done) otherwise. Events beyond a cap are
 * dead-lettered with `crm_park_full`. Every event handled is finished. Redis trouble is retried
 * until the engine stops (then the events stay unfinished, so uncommitted, and come again).
 */
export async function parkEvents(
  deps: ParkWriterDeps,
  accountId: string,
  events: readonly ParkableEvent[],
  options: { force: boolean; dueAtMs?: number; reason?: string },
): Promise<boolean> {
  if (events.length === 0 && !options.force) return false;
  const at = deps.now();
  const entries = events.map((e) => ({ message: e.sink.message, parkedAtMs: at }));
  // Each step retried on its own: a repeated park call would park the events twice.
  const result = await retrying(deps, accountId, () => deps.settings.store.park(accountId, entries, options));
  if (!result.parked) return false;
  const overflow = events.slice(result.accepted);
  if (overflow.length > 0) {
    const reason = `the parked events of account ${accountId} reached their cap (CRM_PARK_MAX_*); replay once its CRM is back`;
    await retrying(deps, accountId, async () => {
      await deps.deadLetters.publish(overflow.map((e) => ({ message: e.sink.message, code: 'crm_park_full', reason: `${reason}: event ${e.eventId}` })));
      await deps.syncStates.record(overflow.map((e) => ({ accountId: e.accountId, eventId: e.eventId, state: 'failed', reason })));
    });
    deps.metrics.park.inc({ action: 'dead_lettered' }, overflow.length);
    deps.logger.warn({ accountId, deadLettered: overflow.length }, 'CRM park full for the account: events dead-lettered (crm_park_full)');
  }
  deps.metrics.park.inc({ action: 'parked' }, result.accepted);
  for (const e of events) e.sink.finish();
  return true;
}

/** Redis or Kafka trouble is not the events' fault: retried until the engine stops. */
export async function retrying<T>(deps: Pick<ParkWriterDeps, 'logger' | 'signal'>, accountId: string, work: () => Promise<T>): Promise<T> {
  for (let failures = 0; ; failures++) {
    try {
      return await work();
    } catch (err) {
      if (deps.signal.aborted) throw err;
      deps.logger.error({ err, accountId }, 'CRM park step failed on infrastructure; retrying');
      await sleep(infraRetryDelayMs(failures), undefined, { signal: deps.signal });
    }
  }
}

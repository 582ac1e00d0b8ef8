import { setTimeout as sleep } from 'node:timers/promises';
import { parkDelayMs, parkEvents } from '../park/park.writer.js';
import type { Lease } from '../park/park.store.js';
import { infraRetryDelayMs } from '../retry/backoff.js';
import { AccountBlocked } from '../retry/crm-call.retry.js';
import { closeAdapter } from './account-adapter.resolver.js';
import { type AccountWorker, chained, createAccountWorkers } from './account.workers.js';
import { type AccountFlush, createCoalescer } from './coalescer.js';
import { createFlushRunner } from './flush.runner.js';
import { createParkedReplay } from './parked.replay.js';
import type { PendingEvent, PlannedEvent, SinkEvent, SyncEngineDeps, SyncRuntime } from './sync-engine.deps.js';
import { createSyncPlanner } from './sync.planner.js';

export type { SinkEvent, SyncEngineDeps } from './sync-engine.deps.js';

/**
 * Events in, CRM effects out. Plans each event with the account's newest mapping
 * (sync.planner.ts), coalesces the operations per record, and runs each account's flushes
 * (flush.runner.ts) one after another (so a record's writes stay in event order) while accounts
 * run side by side: a paused or failing CRM delays only its own account (account.workers.ts).
 * An event is finished (its offset may be committed) once it was synced, skipped, dead-lettered
 * or parked, and its sync state is recorded.
 *
 * Parking (with `parking` set; docs/crm-sync.md): a call that would wait or hang beyond the hold
 * throws AccountBlocked; the account's flush, its queued flushes and its buffered events are
 * then parked in Redis, in arrival order, and finished, so partition offsets move on. While an
 * account has parked events, its new events are parked behind them. `resumeParked` (called by
 * the park resumer under the account's lease) applies them again in order once the account is
 * due (parked.replay.ts).
 *
 * Suspension (issue 17, with `parking` and `accountSuspended`): a suspended account is held like
 * a blocked one, before any CRM call. Its new events, its coalescing events and its queued
 * flushes are parked (not dropped, not dead-lettered); the resumer looks at it every poll and
 * leaves it parked while it is suspended (the events do not age meanwhile: park.store `hold`).
 * Once resumed, the parked events are applied in order like any parked account's.
 */
export interface SyncEngine {
  /** Plans the events; skipped ones are recorded and finished before this resolves. */
  submit(events: readonly SinkEvent[]): Promise<void>;
  /** Applies an account's parked events in order while it holds `lease`; stops when blocked again (rescheduled) or drained. */
  resumeParked(accountId: string, lease: Lease): Promise<void>;
  /** Abandons buffered and waiting work (left unfinished, so uncommitted) and waits for running flushes to end. */
  stop(): Promise<void>;
}

export function createSyncEngine(deps: SyncEngineDeps): SyncEngine {
  const now = deps.now ?? Date.now;
  const log = deps.logger.child({ component: 'crm-sync' });
  const abort = new AbortController();
  const runtime: SyncRuntime = { log, now, signal: abort.signal };
  const coalescer = createCoalescer<PendingEvent>({ windowMs: deps.coalesceWindowMs, maxRecords: deps.coalesceMaxRecords });
  const workers = createAccountWorkers(deps, runtime);
  const planner = createSyncPlanner(deps);
  const runFlush = createFlushRunner(deps, workers, runtime);
  const resumeStep = createParkedReplay(deps, { planner, runFlush, workers }, runtime);
  let timer: NodeJS.Timeout | undefined;
  const parking = deps.parking;
  const parkDeps = parking && {
    settings: parking,
    deadLetters: deps.deadLetters,
    syncStates: deps.syncStates,
    metrics: deps.metrics,
    logger: log,
    signal: abort.signal,
    now,
  };

  function schedule(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (abort.signal.aborted) return;
    const wait = coalescer.nextDueInMs(now());
    if (wait === undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      for (const flush of coalescer.takeDue(now())) enqueue(flush);
      schedule();
    }, wait);
  }

  function enqueue(flush: AccountFlush<PendingEvent>): void {
    const w = workers.of(flush.accountId);
    if (parkDeps && w.parking > 0) {
      void chained(w, 'parkChain', () => parkEvents(parkDeps, flush.accountId, eventsOf([flush]), { force: true })).catch((err: unknown) => {
        if (!abort.signal.aborted) log.error({ err, accountId: flush.accountId }, 'parking a flush failed');
      });
      return;
    }
    w.queue.push(flush);
    w.running ??= drain(flush.accountId, w).finally(() => {
      w.running = undefined;
    });
  }

  /** The events of flushes, each once, in arrival order. */
  function eventsOf(flushes: readonly (AccountFlush<PendingEvent> | undefined)[]): PendingEvent[] {
    const events = new Set<PendingEvent>();
    for (const flush of flushes) for (const rec of flush?.records ?? []) for (const { event } of rec.ops) events.add(event);
    return [...events].sort((a, b) => a.seq - b.seq);
  }

  /** The account is blocked: park the flush, the queued ones and the buffered events, in arrival order. */
  async function parkBlocked(accountId: string, w: AccountWorker, blocked: AccountBlocked, flushes: AccountFlush<PendingEvent>[]): Promise<void> {
    if (!parkDeps || !parking) return;
    w.epoch += 1;
    w.parking += 1;
    try {
      const events = eventsOf([...flushes, coalescer.take(accountId)]);
      const delay = parkDelayMs(parking, blocked, 0);
      await chained(w, 'parkChain', () => parkEvents(parkDeps, accountId, events, { force: true, dueAtMs: now() + delay, reason: blocked.message }));
      await deps.health?.parked(accountId, blocked);
      log.warn({ accountId, cause: blocked.why, parked: events.length, retryInMs: delay }, 'CRM account blocked: its events are parked');
    } finally {
      w.parking -= 1;
    }
  }

  async function drain(accountId: string, w: AccountWorker): Promise<void> {
    let failures = 0;
    while (w.queue.length > 0 && !abort.signal.aborted) {
      const flush = w.queue[0] as AccountFlush<PendingEvent>;
      try {
        const outcome = await chained(w, 'lock', () => runFlush(accountId, w, flush));
        w.queue.shift();
        failures = 0;
        if (outcome instanceof AccountBlocked) await parkBlocked(accountId, w, outcome, [flush, ...w.queue.splice(0)]);
      } catch (err) {
        if (abort.signal.aborted) return;
        // Redis or Kafka trouble, not the events' fault: the flush runs again (the ledger makes that safe).
        log.error({ err, accountId }, 'CRM flush failed on infrastructure; retrying');
        try {
          await sleep(infraRetryDelayMs(failures++), undefined, { signal: abort.signal });
        } catch {
          return;
        }
      }
    }
  }

  /** New events of an account: behind its parked ones if it has any, else into the coalescer. */
  async function admit(accountId: string, items: PlannedEvent[], at: number): Promise<void> {
    const w = workers.of(accountId);
    if (parkDeps) {
      const epoch = w.epoch;
      const pendings = items.map((i) => i.pending);
      // With events of the account still in memory here, the new ones join them (coalescer), so the
      // flush that finds the account suspended parks them all in arrival order (parkBlocked).
      const inMemory = w.parking > 0 || w.running !== undefined || w.queue.length > 0 || coalescer.has(accountId);
      if (workers.suspended(accountId, w) && !inMemory) {
        // Held behind anything parked before; the resumer looks at the account again next poll.
        const dueAtMs = now() + parkDeps.settings.pollMs;
        await chained(w, 'parkChain', () => parkEvents(parkDeps, accountId, pendings, { force: true, dueAtMs, reason: 'account_suspended' }));
        await deps.health?.parked(accountId, { why: 'suspended', message: 'the account is suspended' });
        return;
      }
      if (await chained(w, 'parkChain', () => parkEvents(parkDeps, accountId, pendings, { force: w.parking > 0 }))) return;
      // Parked by this replica while we asked: behind the parked events too.
      if (w.epoch !== epoch || w.parking > 0) {
        await chained(w, 'parkChain', () => parkEvents(parkDeps, accountId, pendings, { force: true }));
        return;
      }
    }
    for (const { pending, ops } of items) for (const op of ops) coalescer.add(accountId, op, pending, at);
  }

  return {
    async submit(events) {
      const at = now();
      const { skipped, planned } = planner.plan(events);
      await planner.recordSkipped(skipped);
      const byAccount = new Map<string, PlannedEvent[]>();
      for (const item of planned) byAccount.set(item.pending.accountId, [...(byAccount.get(item.pending.accountId) ?? []), item]);
      await Promise.all([...byAccount].map(([accountId, items]) => admit(accountId, items, at)));
      for (const flush of coalescer.takeDue(now())) enqueue(flush);
      schedule();
    },
    async resumeParked(accountId, lease) {
      if (!parking) return;
      const w = workers.of(accountId);
      while (!abort.signal.aborted && (await resumeStep(accountId, w, parking)) && (await lease.renew()));
    },
    async stop() {
      abort.abort();
      if (timer) clearTimeout(timer);
      await Promise.allSettled(workers.all().flatMap((w) => [w.running, w.parkChain, w.lock]));
      await Promise.allSettled(workers.all().map((w) => (w.adapter ? closeAdapter(w.adapter.adapter) : undefined)));
    },
  };
}

import { setTimeout as sleep } from 'node:timers/promises';
import type { EventRecord } from '@ingest/schemas';
import { AppError, type ConsumedMessage, type DeadLetterSink, type Logger } from '@ingest/platform';
import {
  type CredentialOpener,
  type CrmCredential,
  createEventRecordDecoder,
  type MappingReader,
  type PlannedOperation,
  planSync,
  plannedLink,
  type StoredCrmCredential,
  type SyncStateStore,
  type SyncStateUpdate,
} from '@ingest/domain';
import type { CrmAdapter } from '../adapters/adapter.js';
import { type ParkingSettings, parkDelayMs, parkEvents } from '../park/park.writer.js';
import type { Lease } from '../park/park.store.js';
import { createAccountRateLimiter, type RateLimit } from '../rate/account-limiter.js';
import { infraRetryDelayMs } from '../retry/backoff.js';
import { AccountBlocked, type AccountCaller, createAccountCaller, type RetryPolicy } from '../retry/crm-call.retry.js';
import { type AccountFlush, createCoalescer, type RecordBuffer } from './coalescer.js';
import { executeFlush, type FlushEvent, type RecordFailure } from './flush.executor.js';
import type { PendingLinksStore } from './pending-links.store.js';
import type { RecordStateStore } from './record-state.store.js';
import type { SyncHealthRecorder } from './sync-health.recorder.js';
import type { SyncMetrics } from './sync.metrics.js';

/**
 * Events in, CRM effects out. Plans each event with the account's newest mapping, coalesces the
 * operations per record, and runs each account's flushes one after another (so a record's
 * writes stay in event order) while accounts run side by side: a paused or failing CRM delays
 * only its own account. An event is finished (its offset may be committed) once it was synced,
 * skipped, dead-lettered or parked, and its sync state is recorded.
 *
 * Parking (with `parking` set; docs/crm-sync.md): a call that would wait or hang beyond the hold
 * throws AccountBlocked; the account's flush, its queued flushes and its buffered events are
 * then parked in Redis, in arrival order, and finished, so partition offsets move on. While an
 * account has parked events, its new events are parked behind them. `resumeParked` (called by
 * the park resumer under the account's lease) applies them again in order once the account is due.
 *
 * Suspension (issue 17, with `parking` and `accountSuspended`): a suspended account is held like
 * a blocked one, before any CRM call. Its new events, its coalescing events and its queued
 * flushes are parked (not dropped, not dead-lettered); the resumer looks at it every poll and
 * leaves it parked while it is suspended (the events do not age meanwhile: park.store `hold`).
 * Once resumed, the parked events are applied in order like any parked account's.
 */
export interface SinkEvent {
  record: EventRecord;
  message: ConsumedMessage;
  /** Called once the event's outcome is durable. */
  finish(): void;
}

interface Planned {
  pending: PendingEvent;
  ops: PlannedOperation[];
}

interface PendingEvent extends FlushEvent {
  sink: SinkEvent;
  /** Arrival order in this engine: parked events keep it. */
  seq: number;
}

export interface SyncEngineDeps {
  mappings: MappingReader;
  /** Decrypts a stored credential (crm-sink's private keys); throws AppError with a dead-letter code. */
  openCredential: CredentialOpener;
  /** `stored`: the record the credential was opened from (an OAuth credential's tokens are keyed on it). */
  createAdapter: (credential: CrmCredential, stored: StoredCrmCredential) => CrmAdapter;
  store: RecordStateStore;
  /** Links waiting for their company (pending-links.store.ts). */
  pendingLinks?: PendingLinksStore;
  syncStates: SyncStateStore;
  deadLetters: DeadLetterSink;
  logger: Logger;
  metrics: SyncMetrics;
  /** The accounts' sync health (states after flushes and parks); without it none is kept. */
  health?: SyncHealthRecorder;
  coalesceWindowMs: number;
  coalesceMaxRecords: number;
  rate: RateLimit;
  retry: RetryPolicy;
  /** The account's shared token bucket (Redis); without it each instance keeps its own. */
  tokenBucketOf?: (accountId: string) => () => Promise<number>;
  /** Without it, a blocked account waits in memory (holding its partitions' offsets). */
  parking?: ParkingSettings;
  /** From the control plane: true while the account is suspended (its sync is held). Only used with `parking`. */
  accountSuspended?: (accountId: string) => boolean;
  /** Erasure (docs/erasure.md): a parked event of an erased person or company is dropped when resumed. */
  erased?: (record: EventRecord) => boolean;
  now?: () => number;
}

export interface SyncEngine {
  /** Plans the events; skipped ones are recorded and finished before this resolves. */
  submit(events: readonly SinkEvent[]): Promise<void>;
  /** Applies an account's parked events in order while it holds `lease`; stops when blocked again (rescheduled) or drained. */
  resumeParked(accountId: string, lease: Lease): Promise<void>;
  /** Abandons buffered and waiting work (left unfinished, so uncommitted) and waits for running flushes to end. */
  stop(): Promise<void>;
}

interface AccountWorker {
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

/** HTTP adapters own a keep-alive pool (`close`); the in-memory ones do not. */
async function closeAdapter(adapter: CrmAdapter): Promise<void> {
  const closable = adapter as CrmAdapter & { close?: () => Promise<void> };
  await closable.close?.().catch(() => undefined);
}

export function createSyncEngine(deps: SyncEngineDeps): SyncEngine {
  const now = deps.now ?? Date.now;
  const log = deps.logger.child({ component: 'crm-sync' });
  const coalescer = createCoalescer<PendingEvent>({ windowMs: deps.coalesceWindowMs, maxRecords: deps.coalesceMaxRecords });
  const workers = new Map<string, AccountWorker>();
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let seq = 0;
  const decodeRecord = createEventRecordDecoder();
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

  function chained<T>(w: AccountWorker, key: 'parkChain' | 'lock', work: () => Promise<T>): Promise<T> {
    const run = w[key].then(work);
    w[key] = run.catch(() => undefined);
    return run;
  }

  /** The account is suspended and its sync is held; logs when this replica sees that change. */
  function suspended(accountId: string, w: AccountWorker): boolean {
    const held = parking !== undefined && deps.accountSuspended?.(accountId) === true;
    if (held !== w.held) {
      w.held = held;
      if (held) log.warn({ accountId }, 'account suspended: its CRM sync is paused, its events are held in the park');
      else log.info({ accountId }, 'account no longer suspended: its CRM sync continues');
    }
    return held;
  }

  function worker(accountId: string): AccountWorker {
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
  }

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
    const w = worker(flush.accountId);
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

  /** The account's adapter for its current mapping's credential, or why there is none. */
  function adapterFor(accountId: string, w: AccountWorker): CrmAdapter | RecordFailure {
    const mapping = deps.mappings.currentMapping(accountId);
    if (!mapping) return { code: 'crm_mapping_missing', reason: 'the account has no CRM mapping any more' };
    const stored = deps.mappings.crmCredential(accountId, mapping.mapping.crm.credentialsRef);
    if (!stored) return { code: 'crm_credential_missing', reason: `no stored credential named ${mapping.mapping.crm.credentialsRef}` };
    if (stored.credential.type !== mapping.mapping.crm.type) {
      return {
        code: 'crm_credential_mismatch',
        reason: `credential ${stored.name} is for ${stored.credential.type}, the mapping is for ${mapping.mapping.crm.type}`,
      };
    }
    // Opened (decrypted) once per stored version; a re-wrap for a new key keeps the tag, and the adapter.
    // The clear settings are part of it: a record whose URL changed is opened again (and refused
    // when its AAD no longer verifies) rather than served by the adapter of the record it was.
    const ref = `${stored.name}@${stored.updatedAt}@${stored.sealed?.tag ?? 'plaintext'}@${JSON.stringify(stored.credential)}`;
    if (w.adapter?.ref !== ref) {
      let adapter: CrmAdapter;
      try {
        const credential: CrmCredential = deps.openCredential(stored);
        adapter = deps.createAdapter(credential, stored);
      } catch (err) {
        if (err instanceof AppError) return { code: err.code, reason: err.message };
        throw err;
      }
      if (w.adapter) void closeAdapter(w.adapter.adapter);
      w.adapter = { ref, adapter };
    }
    return w.adapter.adapter;
  }

  /** 'done' once every event has its outcome; AccountBlocked (with parking) when the CRM cannot be used now. */
  async function runFlush(accountId: string, w: AccountWorker, flush: AccountFlush<PendingEvent>): Promise<'done' | AccountBlocked> {
    if (parking && suspended(accountId, w)) return new AccountBlocked('suspended', parking.pollMs, 'the account is suspended');
    const adapter = adapterFor(accountId, w);
    let failures: Map<RecordBuffer<PendingEvent>, RecordFailure>;
    try {
      failures =
        'code' in adapter
          ? new Map(flush.records.map((r) => [r, adapter]))
          : await executeFlush(accountId, flush.records, {
              adapter,
              caller: w.caller,
              store: deps.store,
              signal: abort.signal,
              ...(deps.pendingLinks ? { pendingLinks: deps.pendingLinks } : {}),
            });
    } catch (err) {
      if (err instanceof AccountBlocked) return err;
      throw err;
    }

    const outcomes = new Map<PendingEvent, RecordFailure | undefined>();
    for (const rec of flush.records) {
      for (const { event } of rec.ops) if (!outcomes.has(event) || failures.has(rec)) outcomes.set(event, outcomes.get(event) ?? failures.get(rec));
      deps.metrics.coalesced.inc(Math.max(0, rec.ops.length - 1));
    }
    const failed = [...outcomes].filter((o): o is [PendingEvent, RecordFailure] => o[1] !== undefined);
    await deps.deadLetters.publish(
      failed.map(([e, f]) => ({ message: e.sink.message, code: f.code, reason: `account ${e.accountId} event ${e.eventId}: ${f.reason}` })),
    );
    await deps.syncStates.record(
      [...outcomes].map(([e, f]) =>
        f ? { accountId: e.accountId, eventId: e.eventId, state: 'failed', reason: f.reason } : { accountId: e.accountId, eventId: e.eventId, state: 'synced' },
      ),
    );
    const at = now();
    for (const [e, f] of outcomes) {
      deps.metrics.outcomes.inc({ state: f ? 'failed' : 'synced' });
      if (!f) deps.metrics.lag.observe(Math.max(0, at - e.sink.record.receivedAtMs) / 1000);
      e.sink.finish();
    }
    const firstFailure = failed[0]?.[1];
    await deps.health?.flushed(accountId, { synced: outcomes.size - failed.length, failed: failed.length, ...(firstFailure ? { failure: firstFailure } : {}) });
    if (failed.length > 0)
      log.warn({ accountId, failed: failed.length, codes: [...new Set(failed.map(([, f]) => f.code))] }, 'CRM sync failed for some events; dead-lettered');
    return 'done';
  }

  /** Plans each event with the account's newest mapping; events no rule acts on are skipped. */
  function plan(events: readonly SinkEvent[]): { skipped: { event: SinkEvent; update: SyncStateUpdate }[]; planned: Planned[] } {
    const skipped: { event: SinkEvent; update: SyncStateUpdate }[] = [];
    const planned: Planned[] = [];
    for (const event of events) {
      const { accountId, eventId } = event.record;
      const mapping = deps.mappings.currentMapping(accountId);
      const ops = mapping ? planSync(mapping.mapping, event.record) : [];
      if (ops.length === 0) {
        const reason = !mapping
          ? 'no_mapping'
          : event.record.email === null && event.record.domain === null
            ? noContactReason(event.record)
            : 'no_rule_matched';
        skipped.push({ event, update: { accountId, eventId, state: 'skipped', reason } });
        continue;
      }
      const link = mapping ? plannedLink(mapping.mapping, event.record, ops.length) : undefined;
      planned.push({ pending: { accountId, eventId, timestampMs: event.record.timestampMs, sink: event, seq: seq++, ...(link ? { link } : {}) }, ops });
    }
    return { skipped, planned };
  }

  async function recordSkipped(skipped: { event: SinkEvent; update: SyncStateUpdate }[]): Promise<void> {
    if (skipped.length === 0) return;
    await deps.syncStates.record(skipped.map((s) => s.update));
    for (const s of skipped) {
      deps.metrics.outcomes.inc({ state: 'skipped' });
      deps.metrics.skipped.inc({ reason: s.update.reason ?? 'unknown' });
      s.event.finish();
    }
  }

  /** New events of an account: behind its parked ones if it has any, else into the coalescer. */
  async function admit(accountId: string, items: Planned[], at: number): Promise<void> {
    const w = worker(accountId);
    if (parkDeps) {
      const epoch = w.epoch;
      const pendings = items.map((i) => i.pending);
      // With events of the account still in memory here, the new ones join them (coalescer), so the
      // flush that finds the account suspended parks them all in arrival order (parkBlocked).
      const inMemory = w.parking > 0 || w.running !== undefined || w.queue.length > 0 || coalescer.has(accountId);
      if (suspended(accountId, w) && !inMemory) {
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

  /** One step of resuming: the oldest parked events; false when done (drained, blocked again, stopping). */
  async function resumeStep(accountId: string, w: AccountWorker, settings: ParkingSettings): Promise<boolean> {
    /** Suspended: left parked, looked at again next poll. */
    const hold = async (reason?: string) => {
      const at = now();
      await settings.store.hold(accountId, at + settings.pollMs, at, reason);
      return false;
    };
    if (suspended(accountId, w)) return hold();
    const chunk = await settings.store.peek(accountId, settings.resumeBatch);
    if (chunk.entries.length === 0) {
      await settings.store.remove(accountId, 0, 0);
      // Drained without a flush saying so (e.g. the last parked events were all skipped): not parked any more.
      await deps.health?.unparked(accountId);
      return false;
    }
    const cutoff = now() - settings.maxAgeMs;
    let expired = 0;
    // Time suspended does not count: an event ages from when it was parked or last held, whichever is later.
    while (expired < chunk.entries.length && Math.max(chunk.entries[expired]?.parkedAtMs ?? 0, chunk.heldAtMs) <= cutoff) expired += 1;
    const taken = chunk.entries.slice(0, expired > 0 ? expired : chunk.entries.length);
    const bytes = taken.reduce((sum, e) => sum + e.bytes, 0);
    if (expired > 0) {
      await deadLetterParked(
        accountId,
        taken,
        'crm_retries_exhausted',
        `not synced within CRM_PARK_MAX_AGE_MS (${settings.maxAgeMs} ms) of being parked: the CRM stayed blocked`,
      );
    } else {
      const events: SinkEvent[] = [];
      const broken = [];
      for (const entry of taken) {
        const decoded = decodeRecord(entry.message.value);
        if (decoded.ok) {
          if (!deps.erased?.(decoded.record)) events.push({ record: decoded.record, message: entry.message, finish: () => undefined });
        } else broken.push({ message: entry.message, code: decoded.code, reason: decoded.reason });
      }
      await deps.deadLetters.publish(broken);
      const { skipped, planned } = plan(events);
      await recordSkipped(skipped);
      const local = createCoalescer<PendingEvent>({ windowMs: 0, maxRecords: Number.MAX_SAFE_INTEGER });
      for (const { pending, ops } of planned) for (const op of ops) local.add(accountId, op, pending, now());
      const flush = local.take(accountId);
      const outcome = flush ? await chained(w, 'lock', () => runFlush(accountId, w, flush)) : 'done';
      if (outcome instanceof AccountBlocked && outcome.why === 'suspended') return hold();
      // A broken credential waits for the owner to connect again, without ageing its events.
      if (outcome instanceof AccountBlocked && outcome.why === 'credential_broken') return hold(`credential_broken: ${outcome.message}`);
      if (outcome instanceof AccountBlocked) {
        const delay = parkDelayMs(settings, outcome, chunk.attempts + 1);
        await settings.store.reschedule(accountId, now() + delay, outcome.message);
        await deps.health?.parked(accountId, outcome);
        log.warn({ accountId, cause: outcome.why, retryInMs: delay }, 'CRM account still blocked: its parked events wait');
        return false;
      }
      deps.metrics.park.inc({ action: 'resumed' }, taken.length);
    }
    await settings.store.remove(accountId, taken.length, bytes);
    return !abort.signal.aborted;
  }

  async function deadLetterParked(accountId: string, entries: readonly { message: ConsumedMessage; parkedAtMs: number }[], code: string, why: string) {
    const ids = entries.map((e) => decodeRecord(e.message.value)).map((d) => (d.ok ? d.record.eventId : undefined));
    await deps.deadLetters.publish(entries.map((e, i) => ({ message: e.message, code, reason: `account ${accountId} event ${ids[i] ?? '?'}: ${why}` })));
    await deps.syncStates.record(ids.flatMap((eventId) => (eventId ? [{ accountId, eventId, state: 'failed' as const, reason: why }] : [])));
    deps.metrics.park.inc({ action: 'dead_lettered' }, entries.length);
    log.warn({ accountId, deadLettered: entries.length, code }, 'parked CRM events dead-lettered');
  }

  return {
    async submit(events) {
      const at = now();
      const { skipped, planned } = plan(events);
      await recordSkipped(skipped);
      const byAccount = new Map<string, Planned[]>();
      for (const item of planned) byAccount.set(item.pending.accountId, [...(byAccount.get(item.pending.accountId) ?? []), item]);
      await Promise.all([...byAccount].map(([accountId, items]) => admit(accountId, items, at)));
      for (const flush of coalescer.takeDue(now())) enqueue(flush);
      schedule();
    },
    async resumeParked(accountId, lease) {
      if (!parking) return;
      const w = worker(accountId);
      while (!abort.signal.aborted && (await resumeStep(accountId, w, parking)) && (await lease.renew()));
    },
    async stop() {
      abort.abort();
      if (timer) clearTimeout(timer);
      await Promise.allSettled([...workers.values()].flatMap((w) => [w.running, w.parkChain, w.lock]));
      await Promise.allSettled([...workers.values()].map((w) => (w.adapter ? closeAdapter(w.adapter.adapter) : undefined)));
    },
  };
}

/**
 * Why an event without email or domain has no CRM work: `identity_unresolved` when it names its
 * person by a Segment userId/anonymousId (their email is not known to us yet: docs/segment.md),
 * else `missing_identity`.
 */
function noContactReason(record: EventRecord): string {
  return record.userId !== undefined || record.anonymousId !== undefined ? 'identity_unresolved' : 'missing_identity';
}

import type { ConsumedMessage } from '@ingest/platform';
import { createEventRecordDecoder } from '@ingest/domain';
import { type ParkingSettings, parkDelayMs } from '../park/park.writer.js';
import { AccountBlocked } from '../retry/crm-call.retry.js';
import { type AccountWorker, type AccountWorkers, chained } from './account.workers.js';
import { createCoalescer } from './coalescer.js';
import type { FlushRunner } from './flush.runner.js';
import type { PendingEvent, SinkEvent, SyncEngineDeps, SyncRuntime } from './sync-engine.deps.js';
import type { SyncPlanner } from './sync.planner.js';

/**
 * Applying an account's parked events again (docs/crm-sync.md, "Parking"), one chunk a step,
 * oldest first: a suspended account is held (its events do not age meanwhile); events parked
 * longer than CRM_PARK_MAX_AGE_MS are dead-lettered; the others are decoded, planned and flushed
 * as one flush, under the account's flush lock. A flush that meets the account blocked again
 * reschedules it; a broken credential holds it until the owner connects again.
 */
export type ParkedReplayStep = (accountId: string, w: AccountWorker, settings: ParkingSettings) => Promise<boolean>;

export function createParkedReplay(
  deps: Pick<SyncEngineDeps, 'deadLetters' | 'syncStates' | 'metrics' | 'health' | 'erased'>,
  parts: { planner: SyncPlanner; runFlush: FlushRunner; workers: Pick<AccountWorkers, 'suspended'> },
  { log, now, signal }: SyncRuntime,
): ParkedReplayStep {
  const decodeRecord = createEventRecordDecoder();

  async function deadLetterParked(accountId: string, entries: readonly { message: ConsumedMessage; parkedAtMs: number }[], code: string, why: string) {
    const ids = entries.map((e) => decodeRecord(e.message.value)).map((d) => (d.ok ? d.record.eventId : undefined));
    await deps.deadLetters.publish(entries.map((e, i) => ({ message: e.message, code, reason: `account ${accountId} event ${ids[i] ?? '?'}: ${why}` })));
    await deps.syncStates.record(ids.flatMap((eventId) => (eventId ? [{ accountId, eventId, state: 'failed' as const, reason: why }] : [])));
    deps.metrics.park.inc({ action: 'dead_lettered' }, entries.length);
    log.warn({ accountId, deadLettered: entries.length, code }, 'parked CRM events dead-lettered');
  }

  /** One step of resuming: the oldest parked events; false when done (drained, blocked again, stopping). */
  return async function resumeStep(accountId, w, settings) {
    /** Suspended: left parked, looked at again next poll. */
    const hold = async (reason?: string) => {
      const at = now();
      await settings.store.hold(accountId, at + settings.pollMs, at, reason);
      return false;
    };
    if (parts.workers.suspended(accountId, w)) return hold();
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
      const { skipped, planned } = parts.planner.plan(events);
      await parts.planner.recordSkipped(skipped);
      const local = createCoalescer<PendingEvent>({ windowMs: 0, maxRecords: Number.MAX_SAFE_INTEGER });
      for (const { pending, ops } of planned) for (const op of ops) local.add(accountId, op, pending, now());
      const flush = local.take(accountId);
      const outcome = flush ? await chained(w, 'lock', () => parts.runFlush(accountId, w, flush)) : 'done';
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
    return !signal.aborted;
  };
}

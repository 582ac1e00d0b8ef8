import { AccountBlocked } from '../retry/crm-call.retry.js';
import { adapterFor } from './account-adapter.resolver.js';
import type { AccountWorker, AccountWorkers } from './account.workers.js';
import type { AccountFlush, RecordBuffer } from './coalescer.js';
import { executeFlush, type RecordFailure } from './flush.executor.js';
import type { PendingEvent, SyncEngineDeps, SyncRuntime } from './sync-engine.deps.js';

/**
 * One flush of an account, start to outcome: held first when the account is suspended, then
 * applied with the account's adapter (flush.executor.ts), then every event's outcome made
 * durable (dead letters, sync states, metrics, sync health) and the event finished. Resolves
 * 'done' once every event has its outcome; AccountBlocked (with parking) when the CRM cannot be
 * used now. Throws for infrastructure failures: the flush may run again (the ledger makes that safe).
 */
export type FlushRunner = (accountId: string, w: AccountWorker, flush: AccountFlush<PendingEvent>) => Promise<'done' | AccountBlocked>;

export function createFlushRunner(
  deps: Pick<
    SyncEngineDeps,
    'mappings' | 'openCredential' | 'createAdapter' | 'store' | 'pendingLinks' | 'deadLetters' | 'syncStates' | 'metrics' | 'health' | 'parking'
  >,
  workers: Pick<AccountWorkers, 'suspended'>,
  { log, now, signal }: SyncRuntime,
): FlushRunner {
  const { parking } = deps;
  return async (accountId, w, flush) => {
    if (parking && workers.suspended(accountId, w)) return new AccountBlocked('suspended', parking.pollMs, 'the account is suspended');
    const adapter = adapterFor(deps, accountId, w);
    let failures: Map<RecordBuffer<PendingEvent>, RecordFailure>;
    try {
      failures =
        'code' in adapter
          ? new Map(flush.records.map((r) => [r, adapter]))
          : await executeFlush(accountId, flush.records, {
              adapter,
              caller: w.caller,
              store: deps.store,
              signal,
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
  };
}

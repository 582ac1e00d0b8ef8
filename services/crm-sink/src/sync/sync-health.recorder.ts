import type { Logger } from '@ingest/platform';
import { isCredentialFailure, type OutcomeCounts, type SyncHealthStore, type SyncStateStore, type SyncStateUpdate } from '@ingest/domain';
import type { AccountBlocked } from '../retry/crm-call.retry.js';

/**
 * What the sync engine tells the account's sync health (docs/crm-sync.md, "Sync health"): the
 * outcome counts of every recorded event, and the state after each flush, park or credential
 * verdict. Health is a status display, not an effect of the events: a write that fails is
 * logged and dropped, it never fails or repeats a flush (when Redis is down the flush's own
 * writes fail and it is retried anyway).
 */
export interface SyncHealthRecorder {
  /** A flush ended: `synced` and `failed` events, and the first failure's code and reason. */
  flushed(accountId: string, result: { synced: number; failed: number; failure?: { code: string; reason: string } }): Promise<void>;
  /** The account's CRM is blocked: its events are parked and retried. */
  parked(accountId: string, blocked: Pick<AccountBlocked, 'why' | 'message'>): Promise<void>;
  /** The account's park is empty again: `parked` becomes `running`; any other state is left (a flush sets it). */
  unparked(accountId: string): Promise<void>;
  /**
   * The credential is broken (refused by the CRM, missing, unreadable, or its refresh failed).
   * For whoever finds out, e.g. the OAuth refresh: the state stays until a flush syncs again or
   * `credentialRepaired` is called.
   */
  credentialBroken(accountId: string, reason: string): Promise<void>;
  /** The credential works again (e.g. refreshed): `credential_broken` becomes `running`; any other state is left. */
  credentialRepaired(accountId: string): Promise<void>;
  /** Counts the outcomes of the updates (per account, into the current hour). */
  counted(updates: readonly SyncStateUpdate[]): Promise<void>;
}

/** What an owner reads for each cause of a block. */
const BLOCKED_WORDS: Record<AccountBlocked['why'], string> = {
  rate_limited: 'the CRM is rate limiting this account',
  failing: 'the CRM keeps failing',
  hanging: 'the CRM does not answer',
  suspended: 'the account is suspended',
  credential_broken: 'the CRM credential does not work',
};

export function createSyncHealthRecorder(deps: { store: SyncHealthStore; logger: Logger; now?: () => number }): SyncHealthRecorder {
  const now = deps.now ?? Date.now;
  const log = deps.logger.child({ component: 'crm-sync-health' });

  async function quietly(accountId: string, work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (err) {
      log.warn({ accountId, err: err instanceof Error ? err.message : String(err) }, 'recording CRM sync health failed; the sync goes on');
    }
  }

  return {
    flushed: (accountId, { synced, failed, failure }) =>
      quietly(accountId, async () => {
        if (synced > 0) await deps.store.change(accountId, { state: 'running', success: true, failure: failed > 0 }, now());
        else if (failed > 0 && failure) {
          const credential = isCredentialFailure(failure.code);
          await deps.store.change(
            accountId,
            {
              state: credential ? 'credential_broken' : 'failing',
              reason: credential ? `the CRM credential does not work: ${failure.reason}` : `events failed: ${failure.reason}`,
              failure: true,
            },
            now(),
          );
        }
      }),
    parked: (accountId, blocked) =>
      quietly(accountId, () =>
        deps.store.change(
          accountId,
          // A broken OAuth credential parks the account too, but the owner must act: say so.
          blocked.why === 'credential_broken'
            ? { state: 'credential_broken', reason: `${BLOCKED_WORDS.credential_broken}: ${blocked.message}`, failure: true }
            : { state: 'parked', reason: blocked.why === 'suspended' ? BLOCKED_WORDS.suspended : `${BLOCKED_WORDS[blocked.why]}: ${blocked.message}` },
          now(),
        ),
      ),
    unparked: (accountId) => quietly(accountId, () => deps.store.change(accountId, { state: 'running', onlyFrom: 'parked' }, now())),
    credentialBroken: (accountId, reason) =>
      quietly(accountId, () => deps.store.change(accountId, { state: 'credential_broken', reason, failure: true }, now())),
    credentialRepaired: (accountId) => quietly(accountId, () => deps.store.change(accountId, { state: 'running', onlyFrom: 'credential_broken' }, now())),
    async counted(updates) {
      const byAccount = new Map<string, OutcomeCounts>();
      for (const u of updates) {
        const counts = byAccount.get(u.accountId) ?? { synced: 0, skipped: 0, failed: 0 };
        counts[u.state] += 1;
        byAccount.set(u.accountId, counts);
      }
      const at = now();
      await Promise.all([...byAccount].map(([accountId, counts]) => quietly(accountId, () => deps.store.count(accountId, counts, at))));
    },
  };
}

/**
 * The sync states the engine records, counted into the accounts' health on the way: every path
 * that gives an event its outcome (flushes, skips, park overflow, parked events too old) records
 * it here, so none is missed. Counted only once the states are stored.
 */
export function countingSyncStates(store: SyncStateStore, health: SyncHealthRecorder): SyncStateStore {
  return {
    read: (accountId, eventId) => store.read(accountId, eventId),
    readMany: (accountId, eventIds) => store.readMany(accountId, eventIds),
    async record(updates) {
      await store.record(updates);
      await health.counted(updates);
    },
  };
}

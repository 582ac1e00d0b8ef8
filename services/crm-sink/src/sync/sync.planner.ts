import type { EventRecord } from '@ingest/schemas';
import { planSync, plannedLink, type SyncStateUpdate } from '@ingest/domain';
import type { PlannedEvent, SinkEvent, SyncEngineDeps } from './sync-engine.deps.js';

/**
 * The first step of the sync engine: each event planned with its account's newest mapping into
 * CRM operations, in arrival order (`seq`); an event no rule acts on is skipped, and its skip is
 * recorded (sync state, metrics) and the event finished.
 */
export interface SkippedEvent {
  event: SinkEvent;
  update: SyncStateUpdate;
}

export interface SyncPlanner {
  plan(events: readonly SinkEvent[]): { skipped: SkippedEvent[]; planned: PlannedEvent[] };
  recordSkipped(skipped: readonly SkippedEvent[]): Promise<void>;
}

export function createSyncPlanner(deps: Pick<SyncEngineDeps, 'mappings' | 'syncStates' | 'metrics'>): SyncPlanner {
  let seq = 0;
  return {
    plan(events) {
      const skipped: SkippedEvent[] = [];
      const planned: PlannedEvent[] = [];
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
    },
    async recordSkipped(skipped) {
      if (skipped.length === 0) return;
      await deps.syncStates.record(skipped.map((s) => s.update));
      for (const s of skipped) {
        deps.metrics.outcomes.inc({ state: 'skipped' });
        deps.metrics.skipped.inc({ reason: s.update.reason ?? 'unknown' });
        s.event.finish();
      }
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

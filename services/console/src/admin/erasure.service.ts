import { randomUUID } from 'node:crypto';
import { committedOffsets, type KafkaClient, type Producer, topicOffsets } from '@ingest/platform';
import {
  type CrmStateEraser,
  encodeSuppression,
  ERASURE_RECORD_VERSION,
  type ErasureIdentifierType,
  type EventsEraser,
  identifierHash,
  suppressionKey,
} from '@ingest/domain';
import type { ErasureResult } from '@ingest/schemas';

/**
 * One erasure, in the order that makes it hold (docs/erasure.md):
 * 1. the suppression record is written to `control.erasures` (acks=all): from here on the
 *    storage writer, the crm-sink and the replays drop the identity's events;
 * 2. the end offsets of events.unique are read, and the storage writer's committed offsets are
 *    awaited past them (bounded by `waitMs`): every event the writer could have stored without
 *    knowing the suppression lies below those ends, and it commits only after its insert;
 * 3. only then the rows are counted and deleted, and the mutation awaited (same bound);
 * 4. the CRM sync state of the identity is deleted.
 * `complete` says whether steps 2 and 3 finished in time. Every step is idempotent: the same
 * request again completes an erasure that was not complete.
 */
export interface ErasureService {
  erase(accountId: string, type: ErasureIdentifierType, normalized: string): Promise<ErasureResult>;
}

/** Whether the storage writer has stored (committed) everything events.unique held when asked. */
export interface StorageProgress {
  passedCurrentEnd(timeoutMs: number): Promise<boolean>;
}

export function createStorageProgress(options: { kafka: KafkaClient; topic: string; groupId: string; pollMs?: number }): StorageProgress {
  const pollMs = options.pollMs ?? 200;
  return {
    async passedCurrentEnd(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      const ends = await topicOffsets(options.kafka, options.topic);
      for (;;) {
        const committed = await committedOffsets(options.kafka, options.groupId, options.topic);
        const behind = ends.filter((r) => r.high > r.low && BigInt(committed.get(r.partition) ?? '-1') < r.high);
        if (behind.length === 0) return true;
        if (Date.now() + pollMs > deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    },
  };
}

export interface ErasureServiceDeps {
  producer: Producer;
  /** `control.erasures` with the deployment's prefix. */
  suppressionTopic: string;
  storage: StorageProgress;
  events: EventsEraser;
  crmState: CrmStateEraser;
  /** Bound on waiting for the writer, and again on waiting for the mutation. */
  waitMs: number;
  now?: () => number;
}

export function createErasureService(deps: ErasureServiceDeps): ErasureService {
  const now = deps.now ?? Date.now;
  return {
    async erase(accountId, type, normalized) {
      const record = {
        v: ERASURE_RECORD_VERSION,
        id: randomUUID(),
        accountId,
        type,
        identifierHash: identifierHash(accountId, type, normalized),
        erasedAt: new Date(now()).toISOString(),
      } as const;
      await deps.producer.send(deps.suppressionTopic, [{ key: suppressionKey(record), value: encodeSuppression(record) }]);
      const writerPassed = await deps.storage.passedCurrentEnd(deps.waitMs);
      const events = await deps.events.count(accountId, type, normalized);
      if (events > 0) await deps.events.erase(accountId, type, normalized);
      const mutationsDone = events === 0 || (await deps.events.waitForMutations(deps.waitMs));
      const crm = await deps.crmState.erase(accountId, type, normalized);
      return {
        id: record.id,
        accountId,
        type,
        identifierHash: record.identifierHash,
        erasedAt: record.erasedAt,
        counts: { events, crmRecords: crm.crmRecords, pendingLinks: crm.pendingLinks },
        complete: writerPassed && mutationsDone,
      };
    },
  };
}

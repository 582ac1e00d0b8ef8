import { randomUUID } from 'node:crypto';
import { committedOffsets, type KafkaClient, type Producer, topicOffsets } from '@ingest/platform';
import {
  type CrmStateEraser,
  encodeSuppression,
  ERASURE_RECORD_VERSION,
  type ErasureIdentifierType,
  type EventsEraser,
  identifierHash,
  type IdentityMapEraser,
  type Suppression,
  suppressionKey,
} from '@ingest/domain';
import { ProblemError } from '@ingest/http';
import { ERASURE_IDENTIFIER_TYPES, type ErasureReapplyResult, type ErasureResult } from '@ingest/schemas';

/**
 * One erasure, in the order that makes it hold (docs/erasure.md):
 * 1. the suppression record is written to `control.erasures` (acks=all): from here on the
 *    storage writer, the crm-sink and the replays drop the identity's events;
 * 2. the end offsets of events.unique are read, and the storage writer's committed offsets are
 *    awaited past them (bounded by `waitMs`): every event the writer could have stored without
 *    knowing the suppression lies below those ends, and it commits only after its insert;
 * 3. only then the rows are counted and deleted, and the mutation awaited (same bound);
 * 4. the CRM sync state of the identity is deleted, and the identity map's entries that point
 *    to it (tombstones on `identities`, then the Redis index).
 * `complete` says whether steps 2 and 3 finished in time. Every step is idempotent: the same
 * request again completes an erasure that was not complete.
 */
export interface ErasureService {
  erase(accountId: string, type: ErasureIdentifierType, normalized: string): Promise<ErasureResult>;
  /**
   * After a ClickHouse backup was restored (docs/runbook.md): deletes again the rows of every
   * identity on the suppression list, found by hash. `skipped`: suppressions of an identifier
   * type this release does not know (a newer console wrote them).
   */
  reapply(): Promise<ErasureReapplyResult>;
}

export type { ErasureReapplyResult };

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
  /** The identity map's entries that point to the erased identity (docs/erasure.md); absent: not touched. */
  identityMap?: IdentityMapEraser;
  /** The whole suppression list now (control.erasures read to its end). */
  readSuppressions: () => Promise<Suppression[]>;
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
      // From here on the suppression holds: a failed step must not answer the generic 503 that
      // promises "nothing was done", but say what was done and that the same request finishes it.
      let step = 'waiting for the storage writer';
      try {
        const writerPassed = await deps.storage.passedCurrentEnd(deps.waitMs);
        step = 'deleting the stored events';
        const events = await deps.events.count(accountId, type, normalized);
        if (events > 0) await deps.events.erase(accountId, type, normalized);
        const mutationsDone = events === 0 || (await deps.events.waitForMutations(deps.waitMs));
        step = 'deleting the CRM sync state';
        const crm = await deps.crmState.erase(accountId, type, normalized);
        step = 'removing the identity map entries';
        const identityLinks = deps.identityMap ? await deps.identityMap.erase(accountId, type, normalized) : undefined;
        return result(events, crm, identityLinks, writerPassed && mutationsDone);
      } catch (error) {
        if (error instanceof ProblemError) throw error;
        throw new ProblemError(
          'unavailable',
          `The suppression was recorded (this ${type} is no longer stored, synced or replayed), but ${step} failed. Send the same request again: every step is idempotent.`,
          { extensions: { suppressed: true, failedStep: step }, cause: error },
        );
      }

      function result(events: number, crm: { crmRecords: number; pendingLinks: number }, identityLinks: number | undefined, complete: boolean): ErasureResult {
        return {
          id: record.id,
          accountId,
          type,
          identifierHash: record.identifierHash,
          erasedAt: record.erasedAt,
          counts: { events, crmRecords: crm.crmRecords, pendingLinks: crm.pendingLinks, ...(identityLinks !== undefined ? { identityLinks } : {}) },
          complete,
        };
      }
    },
    async reapply() {
      const groups = new Map<string, { accountId: string; type: ErasureIdentifierType; hashes: string[] }>();
      let skipped = 0;
      const suppressions = await deps.readSuppressions();
      for (const s of suppressions) {
        if (!(ERASURE_IDENTIFIER_TYPES as readonly string[]).includes(s.type)) {
          skipped++;
          continue;
        }
        const key = JSON.stringify([s.accountId, s.type]);
        let group = groups.get(key);
        if (!group) groups.set(key, (group = { accountId: s.accountId, type: s.type as ErasureIdentifierType, hashes: [] }));
        group.hashes.push(s.identifierHash);
      }
      let events = 0;
      // Bounded statements: at most REAPPLY_CHUNK hashes (65 bytes each in the SQL) per delete.
      for (const { accountId, type, hashes } of groups.values()) {
        for (let i = 0; i < hashes.length; i += REAPPLY_CHUNK) events += await deps.events.eraseByHashes(accountId, type, hashes.slice(i, i + REAPPLY_CHUNK));
      }
      const complete = events === 0 || (await deps.events.waitForMutations(deps.waitMs));
      return { suppressions: suppressions.length, skipped, events, complete };
    },
  };
}

const REAPPLY_CHUNK = 1_000;

import type { EventRecord } from '@ingest/schemas';
import type { SuppressionList } from '@ingest/domain';

/**
 * The storage writer's erasure check (docs/erasure.md): an event whose email or domain was
 * erased in its account is not written back to ClickHouse, whether it comes from Kafka's
 * retention, a redelivery or a replay.
 *
 * The race with an erase: before a batch is stepped, the list catches up with every erasure
 * Kafka acknowledged before that moment (`beforeBatch`). So an event stored without the check
 * knowing its erasure was fetched before the erasure was recorded, and therefore lies below
 * the end offsets of events.unique the console reads after recording it; the console deletes
 * only once the writer's committed offsets (which follow its inserts) passed those, so the
 * delete removes it too, and every later copy is filtered here.
 */
export interface ErasureFilter {
  beforeBatch(): Promise<void>;
  erased(record: EventRecord): boolean;
}

export function createErasureFilter(list: Pick<SuppressionList, 'sync' | 'suppressed'>): ErasureFilter {
  return {
    beforeBatch: () => list.sync(),
    erased: (record) => list.suppressed(record),
  };
}

import type { BatchConsumer } from '@ingest/platform';
import { AUDIT_TABLE, decodeAuditRecord, toAuditRow } from '@ingest/domain';
import { createTopicCopier, type TopicCopierDeps } from '../topic-copier.js';

/** audit.log -> ClickHouse `audit_log` (append-only; one row per record id when read). */
export function createAuditCopier(deps: TopicCopierDeps): BatchConsumer {
  return createTopicCopier(deps, { name: 'audit-copier', table: AUDIT_TABLE, decode: decodeAuditRecord, toRow: toAuditRow });
}

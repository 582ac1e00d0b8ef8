import type { BatchConsumer } from '@ingest/platform';
import { decodeLedgerRecord, LEDGER_TABLE, toLedgerRow } from '@ingest/domain';
import { createTopicCopier, type TopicCopierDeps } from '../topic-copier.js';

/** billing.ledger -> ClickHouse `billing_ledger` (one row per record_key when read). */
export function createLedgerCopier(deps: TopicCopierDeps): BatchConsumer {
  return createTopicCopier(deps, { name: 'ledger-copier', table: LEDGER_TABLE, decode: decodeLedgerRecord, toRow: toLedgerRow });
}

import { type BatchConsumer, type ClickHouse, createBatchConsumer, type KafkaClient, type Logger } from '@ingest/platform';
import { decodeLedgerRecord, LEDGER_TABLE, toLedgerRow } from '@ingest/domain';

export interface LedgerCopierDeps {
  kafka: KafkaClient;
  ch: ClickHouse;
  /** billing.ledger */
  topic: string;
  groupId: string;
  logger: Logger;
}

/**
 * billing.ledger -> ClickHouse `billing_ledger`, so data engineers and the admin API can query
 * the ledger. At least once: the offset is committed after the insert, and a record inserted
 * twice is read once (one row per record_key). A message that is not a ledger record is skipped
 * with a warning: nothing but the ledger's own writers write this topic.
 */
export function createLedgerCopier(deps: LedgerCopierDeps): BatchConsumer {
  const log = deps.logger.child({ component: 'ledger-copier' });
  return createBatchConsumer(deps.kafka, {
    name: 'ledger-copier',
    groupId: deps.groupId,
    topics: [deps.topic],
    logger: deps.logger,
    handleBatch: async (messages) => {
      const rows = [];
      for (const m of messages) {
        const record = decodeLedgerRecord(m.value);
        if (record) rows.push(toLedgerRow(record));
        else log.warn({ partition: m.partition, offset: m.offset }, 'skipped a message that is not a ledger record');
      }
      if (rows.length > 0) await deps.ch.insert(LEDGER_TABLE, rows);
    },
  });
}

import { type BatchConsumer, type ClickHouse, createBatchConsumer, type KafkaClient, type Logger } from '@ingest/platform';

export interface TopicCopierDeps {
  kafka: KafkaClient;
  ch: ClickHouse;
  topic: string;
  groupId: string;
  logger: Logger;
}

/**
 * A topic of records written once (the billing ledger, the audit log) -> a ClickHouse table,
 * so data engineers and the admin API can query it. At least once: the offset is committed
 * after the insert, and readers take one row per record id. A message that does not decode is
 * skipped with a warning: nothing but the record's own writers write these topics.
 */
export function createTopicCopier<R>(
  deps: TopicCopierDeps,
  copy: { name: string; table: string; decode(value: Buffer | null): R | undefined; toRow(record: R): Record<string, string | number> },
): BatchConsumer {
  const log = deps.logger.child({ component: copy.name });
  return createBatchConsumer(deps.kafka, {
    name: copy.name,
    groupId: deps.groupId,
    topics: [deps.topic],
    logger: deps.logger,
    handleBatch: async (messages) => {
      const rows = [];
      for (const m of messages) {
        const record = copy.decode(m.value);
        if (record) rows.push(copy.toRow(record));
        else log.warn({ partition: m.partition, offset: m.offset }, `skipped a message that ${copy.name} cannot decode`);
      }
      if (rows.length > 0) await deps.ch.insert(copy.table, rows);
    },
  });
}

import type { ClickHouse } from '@ingest/platform';
import type { KafkaClient } from '@ingest/platform';
import type { Producer } from '@ingest/platform';
import { readTopicToEnd } from '@ingest/platform';
import type { Logger } from '@ingest/platform';
import { type BillingLedgerRecord, decodeLedgerRecord, billingLedgerKey, ledgerQuery, type LedgerRowRead, fromLedgerRow } from './ledger-record.js';

/** Appends records to the ledger topic (acks=all). Callers make sure a key is never written twice. */
export interface LedgerWriter {
  append(records: BillingLedgerRecord[]): Promise<void>;
}

export function createLedgerWriter(producer: Producer, topic: string): LedgerWriter {
  return {
    append: (records) =>
      producer.send(
        topic,
        records.map((r) => ({ key: billingLedgerKey(r), value: JSON.stringify(r) })),
      ),
  };
}

/** The whole ledger topic, by key: the source of truth the closer checks before writing. */
export async function readLedgerTopic(kafka: KafkaClient, topic: string, logger: Logger): Promise<Map<string, BillingLedgerRecord>> {
  const records = new Map<string, BillingLedgerRecord>();
  await readTopicToEnd(kafka, {
    topic,
    logger,
    onMessage: (m) => {
      const record = decodeLedgerRecord(m.value);
      const key = m.key?.toString();
      // The first record of a key is the record: a later one could only be a mistake.
      if (record && key && !records.has(key)) records.set(key, record);
    },
  });
  return records;
}

/** The ledger as copied into ClickHouse, for the admin API and data engineers. */
export interface LedgerReader {
  list(filter: { accountId?: string; period?: string }): Promise<BillingLedgerRecord[]>;
}

export function createLedgerReader(ch: ClickHouse): LedgerReader {
  return {
    list: async (filter) => (await ch.query<LedgerRowRead>(ledgerQuery(filter))).map(fromLedgerRow),
  };
}

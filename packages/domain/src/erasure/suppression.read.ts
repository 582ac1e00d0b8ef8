import { type KafkaClient, type Logger, readTopicToEnd } from '@ingest/platform';
import { createEventRecordDecoder } from '../events/event-record.decode.js';
import { createSuppressionSet } from './suppression.list.js';
import { decodeSuppression, type ErasureSuppressionRecord, suppressionKey } from './erasure-record.js';

/**
 * Reads of the whole suppression list at one moment, for rare operator actions (a replay, the
 * re-application after a restore) where following the topic is not worth a consumer.
 */
export type Suppression = Pick<ErasureSuppressionRecord, 'accountId' | 'type' | 'identifierHash'>;

/** Every suppression in force (tombstones applied), in no particular order. */
export async function readSuppressions(kafka: KafkaClient, topic: string, logger: Logger): Promise<Suppression[]> {
  const byKey = new Map<string, Suppression>();
  await readTopicToEnd(kafka, {
    topic,
    logger,
    onMessage: (m) => {
      const record = decodeSuppression(m.value);
      if (record) byKey.set(suppressionKey(record), record);
      else if (m.value === null && m.key !== null) byKey.delete(m.key.toString());
    },
  });
  return [...byKey.values()];
}

/**
 * The replay's erasure check (docs/erasure.md): a dead letter holding an event of an erased
 * person or company is not replayed. Replays are rare operator actions, so the list is read to
 * its end for each one (a throwaway reader) instead of being followed. Only event records are
 * recognised here; a dead-lettered job chunk is replayed, and the events it becomes are dropped
 * by the storage writer and the crm-sink, which check every event.
 */
export type ErasedCheck = (value: Buffer | null) => boolean;

export async function loadErasedCheck(kafka: KafkaClient, topic: string, logger: Logger): Promise<ErasedCheck> {
  const set = createSuppressionSet();
  await readTopicToEnd(kafka, { topic, logger, onMessage: (m) => set.apply(m.key === null ? null : m.key.toString(), m.value) });
  const decode = createEventRecordDecoder();
  return (value) => {
    if (value === null || set.size === 0) return false;
    const decoded = decode(value);
    return decoded.ok && set.suppressed(decoded.record);
  };
}

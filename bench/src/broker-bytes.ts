/**
 * Bytes a topic takes on the broker per record: what `KAFKA_COMPRESSION` saves on disk and, as
 * produce requests carry the same record batches, on the network (docs/kafka.md). Read from the
 * local stack's log directory (`<STACK_DIR>/kafka/server.properties`, `log.dirs`): a remote broker
 * gives no figure. Records are the topic's end offsets (nothing is deleted during a run).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type KafkaClient, withAdmin } from '@ingest/platform';

export interface BrokerBytes {
  topic: string;
  records: number;
  bytes: number;
  bytesPerRecord: number;
}

export async function brokerBytes(kafka: KafkaClient, stackDir: string, topic: string): Promise<BrokerBytes | undefined> {
  const logDirs = localLogDirs(stackDir);
  if (logDirs.length === 0) return undefined;
  let bytes = 0;
  for (const dir of logDirs) {
    for (const partitionDir of readdirSync(dir).filter((d) => d.startsWith(`${topic}-`) && /^\d+$/.test(d.slice(topic.length + 1)))) {
      for (const file of readdirSync(join(dir, partitionDir)).filter((f) => f.endsWith('.log'))) bytes += statSync(join(dir, partitionDir, file)).size;
    }
  }
  const ranges = await withAdmin(kafka, (admin) => admin.topicOffsets(topic));
  const records = Number(ranges.reduce((sum, r) => sum + r.high - r.low, 0n));
  return { topic, records, bytes, bytesPerRecord: records > 0 ? bytes / records : 0 };
}

function localLogDirs(stackDir: string): string[] {
  let properties: string;
  try {
    properties = readFileSync(join(stackDir, 'kafka', 'server.properties'), 'utf8');
  } catch {
    return [];
  }
  const line = properties.split('\n').find((l) => l.startsWith('log.dirs='));
  return line ? line.slice('log.dirs='.length).trim().split(',').filter(Boolean) : [];
}

import type { Logger } from '../logger.js';
import type { KafkaClient } from './client.js';
import { allTopicSpecs, type TopicSpec } from './topics.js';

export interface EnsureTopicsOptions {
  prefix: string;
  specs?: TopicSpec[];
  /** 1 on the single local broker; 3 in production clusters. */
  replicationFactor?: number;
  logger: Logger;
}

/**
 * Creates the topics that do not exist yet and leaves existing ones alone (their partition
 * count and config are an operator's decision once created). Safe to run on every start.
 */
export async function ensureTopics(kafka: KafkaClient, options: EnsureTopicsOptions): Promise<string[]> {
  const specs = options.specs ?? allTopicSpecs();
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((s) => !existing.has(options.prefix + s.name));
    if (missing.length > 0) {
      await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((s) => ({
          topic: options.prefix + s.name,
          numPartitions: s.partitions,
          replicationFactor: options.replicationFactor ?? 1,
          configEntries: Object.entries(s.config).map(([name, value]) => ({ name, value })),
        })),
      });
    }
    const created = missing.map((s) => options.prefix + s.name);
    options.logger.info({ created, existing: specs.length - missing.length }, 'kafka topics ensured');
    return created;
  } finally {
    await admin.disconnect();
  }
}

export async function deleteTopics(kafka: KafkaClient, topics: string[]): Promise<void> {
  if (topics.length === 0) return;
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const present = topics.filter((t) => existing.has(t));
    if (present.length > 0) await admin.deleteTopics({ topics: present, timeout: 10_000 });
  } finally {
    await admin.disconnect();
  }
}

/** Committed offset per partition for a group, or "-1" where nothing is committed. */
export async function committedOffsets(kafka: KafkaClient, groupId: string, topic: string): Promise<Map<number, string>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [result] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return new Map((result?.partitions ?? []).map((p) => [p.partition, p.offset]));
  } finally {
    await admin.disconnect();
  }
}

import type { Admin } from 'kafkajs';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { KafkaClient } from './client.js';
import { allTopicSpecs, type TopicSpec } from './topics.js';

export interface EnsureTopicsOptions {
  prefix: string;
  specs?: TopicSpec[];
  /** 1 on the single local broker; 3 in production clusters. */
  replicationFactor?: number;
  logger: Logger;
  /** Bound on waiting for the new topics' partition leaders. */
  timeoutMs?: number;
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
    const names = missing.map((s) => options.prefix + s.name);
    if (missing.length > 0) {
      // Leaders are awaited below, not by kafkajs: its wait gives up on UNKNOWN_TOPIC_OR_PARTITION,
      // which a busy broker answers for a moment after creating a topic.
      await admin.createTopics({
        waitForLeaders: false,
        topics: missing.map((s) => ({
          topic: options.prefix + s.name,
          numPartitions: s.partitions,
          replicationFactor: options.replicationFactor ?? 1,
          configEntries: Object.entries(s.config).map(([name, value]) => ({ name, value })),
        })),
      });
      await waitForLeaders(admin, names, options.timeoutMs ?? 60_000);
    }
    options.logger.info({ created: names, existing: specs.length - missing.length }, 'kafka topics ensured');
    return names;
  } finally {
    await admin.disconnect();
  }
}

async function waitForLeaders(admin: Admin, topics: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics });
      if (metadata.length === topics.length && metadata.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))) return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    }
    if (Date.now() > deadline)
      throw new AppError('kafka_topics_not_ready', `topics have no leaders after ${timeoutMs} ms: ${topics.join(', ')}`, { retryable: true });
    await new Promise((r) => setTimeout(r, 200));
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

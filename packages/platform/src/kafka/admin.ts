import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { withAdmin } from './client.js';
import type { KafkaAdmin, KafkaClient, PartitionRange } from './driver.js';
import { replicationProblem, SINGLE_BROKER_REPLICATION, withMinInsyncReplicas } from './replication.js';
import { allTopicSpecs, type TopicSpec } from './topics.js';

export interface EnsureTopicsOptions {
  prefix: string;
  specs?: TopicSpec[];
  /** 1 on the single local broker (the default); 3 in production clusters. */
  replicationFactor?: number;
  /** min.insync.replicas of the created topics: 1 on the single local broker (the default); 2 with replication 3. */
  minInsyncReplicas?: number;
  logger: Logger;
  /** Bound on waiting for the new topics' partition leaders. */
  timeoutMs?: number;
}

/**
 * Creates the topics that do not exist yet and leaves existing ones alone (their partition
 * count and config are an operator's decision once created). Safe to run on every start.
 * Refuses (`kafka_replication_invalid`, before creating anything) a replication factor above the
 * brokers the cluster reports, or min.insync.replicas above the replication factor.
 */
export async function ensureTopics(kafka: KafkaClient, options: EnsureTopicsOptions): Promise<string[]> {
  const specs = options.specs ?? allTopicSpecs();
  const replication = {
    replicationFactor: options.replicationFactor ?? SINGLE_BROKER_REPLICATION.replicationFactor,
    minInsyncReplicas: options.minInsyncReplicas ?? SINGLE_BROKER_REPLICATION.minInsyncReplicas,
  };
  return withAdmin(kafka, async (admin) => {
    const brokers = (await admin.brokerIds()).length;
    const problem = replicationProblem(replication, brokers);
    if (problem !== undefined) throw new AppError('kafka_replication_invalid', problem, { retryable: false });
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((s) => !existing.has(options.prefix + s.name));
    const names = missing.map((s) => options.prefix + s.name);
    if (missing.length > 0) {
      await admin.createTopics(
        missing.map((s) => ({
          name: options.prefix + s.name,
          partitions: s.partitions,
          replicationFactor: replication.replicationFactor,
          config: withMinInsyncReplicas(s.config, replication),
        })),
      );
      await waitForLeaders(admin, names, options.timeoutMs ?? 60_000);
    }
    options.logger.info({ created: names, existing: specs.length - missing.length, brokers, ...replication }, 'kafka topics ensured');
    return names;
  });
}

/** A busy broker answers UNKNOWN_TOPIC_OR_PARTITION for a moment after creating a topic: poll. */
async function waitForLeaders(admin: KafkaAdmin, topics: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const leaders = await admin.partitionLeaders(topics);
      if (topics.every((t) => (leaders.get(t)?.length ?? 0) > 0 && (leaders.get(t) ?? []).every((leader) => leader >= 0))) return;
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
  await withAdmin(kafka, async (admin) => {
    const existing = new Set(await admin.listTopics());
    const present = topics.filter((t) => existing.has(t));
    if (present.length > 0) await admin.deleteTopics(present);
  });
}

/** Committed offset per partition for a group, or "-1" where nothing is committed. */
export async function committedOffsets(kafka: KafkaClient, groupId: string, topic: string): Promise<Map<number, string>> {
  const offsets = await withAdmin(kafka, (admin) => admin.committedOffsets(groupId, [topic]));
  return new Map(offsets.map((p) => [p.partition, p.offset]));
}

/** Low and high offsets of every partition of a topic. */
export function topicOffsets(kafka: KafkaClient, topic: string): Promise<PartitionRange[]> {
  return withAdmin(kafka, (admin) => admin.topicOffsets(topic));
}

/** Deletes the consumer groups whose id `matches`; returns those it found. */
export async function deleteConsumerGroups(kafka: KafkaClient, matches: (groupId: string) => boolean): Promise<string[]> {
  return withAdmin(kafka, async (admin) => {
    const groups = (await admin.listGroups()).filter(matches);
    if (groups.length > 0) await admin.deleteGroups(groups);
    return groups;
  });
}

/** Moves a consumer group (with no live member) to the end of a topic: it skips what is there now. */
export async function skipGroupToEnd(kafka: KafkaClient, groupId: string, topic: string): Promise<void> {
  await withAdmin(kafka, async (admin) => {
    const ranges = await admin.topicOffsets(topic);
    await admin.setCommittedOffsets(
      groupId,
      ranges.map((r) => ({ topic, partition: r.partition, offset: r.high.toString() })),
    );
  });
}

import { Admin, type BaseOptions, ListOffsetTimestamps } from '@platformatic/kafka';
import { ACL_WIRE, type AclBinding, byPartition, type KafkaAdmin, type PartitionRange, type TopicPartitionOffset } from '../driver.js';
import { wrapErrors } from '../errors.js';
import { platformaticTraits } from './platformatic.client.js';
import { completeMetadataAnswers } from './platformatic.metadata.js';

function toWire(b: AclBinding) {
  return {
    resourceType: ACL_WIRE.resourceType[b.resourceType],
    resourceName: b.resourceName,
    resourcePatternType: ACL_WIRE.patternType[b.patternType],
    principal: b.principal,
    host: '*',
    operation: ACL_WIRE.operation[b.operation],
    permissionType: ACL_WIRE.allow,
  };
}

export function createPlatformaticAdmin(base: BaseOptions): KafkaAdmin {
  let admin: Admin | undefined;
  const open = () => (admin ??= completeMetadataAnswers(new Admin({ ...base })));
  const call = <T>(what: string, work: (a: Admin) => Promise<T>) => wrapErrors(`kafka admin ${what}`, platformaticTraits, () => work(open()));

  /** Partition counts of the topics, from fresh metadata. */
  async function partitionsOf(a: Admin, topics: readonly string[]): Promise<Map<string, number>> {
    const metadata = await a.metadata({ topics: [...topics], forceUpdate: true });
    return new Map([...metadata.topics].map(([name, t]) => [name, t.partitionsCount]));
  }

  async function listOffsets(a: Admin, topic: string, partitions: number, timestamp: bigint): Promise<Map<number, bigint>> {
    const [listed] = await a.listOffsets({
      topics: [{ name: topic, partitions: Array.from({ length: partitions }, (_, partitionIndex) => ({ partitionIndex, timestamp })) }],
    });
    return new Map((listed?.partitions ?? []).map((p) => [p.partitionIndex, p.offset]));
  }

  return {
    // Connections open on the first request.
    connect: async () => {
      open();
    },
    disconnect: async () => {
      const closing = admin;
      admin = undefined;
      await wrapErrors('kafka admin disconnect', platformaticTraits, async () => closing?.close());
    },
    listTopics: () => call('listTopics', (a) => a.listTopics()),
    brokerIds: () => call('metadata', async (a) => [...(await a.metadata({ topics: [], forceUpdate: true })).brokers.keys()].sort((x, y) => x - y)),
    createTopics: (topics) =>
      call('createTopics', async (a) => {
        // One request per topic: partition counts and configs differ between topics.
        for (const t of topics) {
          await a.createTopics({
            topics: [t.name],
            partitions: t.partitions,
            replicas: t.replicationFactor,
            configs: Object.entries(t.config).map(([name, value]) => ({ name, value })),
          });
        }
      }),
    partitionLeaders: (topics) =>
      call('metadata', async (a) => {
        const existing = new Set(await a.listTopics());
        const present = topics.filter((t) => existing.has(t));
        if (present.length === 0) return new Map();
        const metadata = await a.metadata({ topics: present, forceUpdate: true });
        return new Map([...metadata.topics].map(([name, t]) => [name, t.partitions.map((p) => p?.leader ?? -1)]));
      }),
    deleteTopics: (topics) => call('deleteTopics', (a) => a.deleteTopics({ topics: [...topics] })),
    topicOffsets: (topic) =>
      call('listOffsets', async (a): Promise<PartitionRange[]> => {
        const count = (await partitionsOf(a, [topic])).get(topic) ?? 0;
        const [low, high] = await Promise.all([
          listOffsets(a, topic, count, ListOffsetTimestamps.EARLIEST),
          listOffsets(a, topic, count, ListOffsetTimestamps.LATEST),
        ]);
        return Array.from({ length: count }, (_, partition) => ({ topic, partition, low: low.get(partition) ?? 0n, high: high.get(partition) ?? 0n }));
      }),
    committedOffsets: (groupId, topics) =>
      call('listConsumerGroupOffsets', async (a): Promise<TopicPartitionOffset[]> => {
        const counts = await partitionsOf(a, topics);
        const [group] = await a.listConsumerGroupOffsets({
          groups: [{ groupId, topics: topics.map((name) => ({ name, partitionIndexes: Array.from({ length: counts.get(name) ?? 0 }, (_, i) => i) })) }],
        });
        const committed = new Map(
          (group?.topics ?? []).flatMap((t) => t.partitions.map((p) => [`${t.name}\u0000${p.partitionIndex}`, p.committedOffset] as const)),
        );
        return topics
          .flatMap((topic) =>
            Array.from({ length: counts.get(topic) ?? 0 }, (_, partition) => {
              const offset = committed.get(`${topic}\u0000${partition}`);
              return { topic, partition, offset: offset === undefined || offset < 0n ? '-1' : offset.toString() };
            }),
          )
          .sort(byPartition);
      }),
    setCommittedOffsets: (groupId, offsets) =>
      call('alterConsumerGroupOffsets', async (a) => {
        const byTopic = new Map<string, { partition: number; offset: bigint }[]>();
        for (const o of offsets) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), { partition: o.partition, offset: BigInt(o.offset) }]);
        await a.alterConsumerGroupOffsets({ groupId, topics: [...byTopic].map(([name, partitionOffsets]) => ({ name, partitionOffsets })) });
      }),
    createAcls: (bindings) =>
      call('createAcls', async (a) => {
        if (bindings.length === 0) return;
        await a.createAcls({ creations: bindings.map(toWire) });
      }),
    deleteAcls: (bindings) =>
      call('deleteAcls', async (a) => {
        if (bindings.length === 0) return;
        await a.deleteAcls({ filters: bindings.map(toWire) });
      }),
    listGroups: () => call('listGroups', async (a) => [...(await a.listGroups()).keys()]),
    deleteGroups: (groupIds) =>
      call('deleteGroups', async (a) => {
        if (groupIds.length > 0) await a.deleteGroups({ groups: [...groupIds] });
      }),
  };
}

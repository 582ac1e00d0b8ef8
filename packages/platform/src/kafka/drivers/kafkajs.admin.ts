import type { AclOperationTypes, AclPermissionTypes, AclResourceTypes, Kafka, ResourcePatternTypes } from 'kafkajs';
import { ACL_WIRE, type AclBinding, byPartition, type KafkaAdmin } from '../driver.js';
import { wrapErrors } from '../errors.js';
import { kafkajsTraits } from './kafkajs.client.js';

/** kafkajs's enums carry Kafka's wire values; its types are TypeScript enums, hence the casts. */
function toWire(b: AclBinding) {
  return {
    resourceType: ACL_WIRE.resourceType[b.resourceType] as unknown as AclResourceTypes,
    resourceName: b.resourceName,
    resourcePatternType: ACL_WIRE.patternType[b.patternType] as unknown as ResourcePatternTypes,
    principal: b.principal,
    host: '*',
    operation: ACL_WIRE.operation[b.operation] as unknown as AclOperationTypes,
    permissionType: ACL_WIRE.allow as unknown as AclPermissionTypes,
  };
}

export function createKafkajsAdmin(kafka: Kafka): KafkaAdmin {
  const admin = kafka.admin();
  const call = <T>(what: string, work: () => Promise<T>) => wrapErrors(`kafka admin ${what}`, kafkajsTraits, work);
  return {
    connect: () => call('connect', () => admin.connect()),
    disconnect: () => call('disconnect', () => admin.disconnect()),
    listTopics: () => call('listTopics', () => admin.listTopics()),
    brokerIds: () => call('describeCluster', async () => (await admin.describeCluster()).brokers.map((b) => b.nodeId).sort((a, b) => a - b)),
    createAcls: (bindings) =>
      call('createAcls', async () => {
        if (bindings.length === 0) return;
        await admin.createAcls({ acl: bindings.map(toWire) });
      }),
    deleteAcls: (bindings) =>
      call('deleteAcls', async () => {
        if (bindings.length === 0) return;
        await admin.deleteAcls({ filters: bindings.map(toWire) });
      }),
    createTopics: (topics) =>
      call('createTopics', async () => {
        // Leaders are awaited by the caller, not by kafkajs: its wait gives up on
        // UNKNOWN_TOPIC_OR_PARTITION, which a busy broker answers for a moment after creating a topic.
        await admin.createTopics({
          waitForLeaders: false,
          topics: topics.map((t) => ({
            topic: t.name,
            numPartitions: t.partitions,
            replicationFactor: t.replicationFactor,
            configEntries: Object.entries(t.config).map(([name, value]) => ({ name, value })),
          })),
        });
      }),
    partitionLeaders: (topics) =>
      call('fetchTopicMetadata', async () => {
        const { topics: metadata } = await admin.fetchTopicMetadata({ topics: [...topics] });
        return new Map(
          metadata.map((t) => {
            const leaders = new Array<number>(t.partitions.length).fill(-1);
            for (const p of t.partitions) leaders[p.partitionId] = p.leader;
            return [t.name, leaders];
          }),
        );
      }),
    deleteTopics: (topics) => call('deleteTopics', () => admin.deleteTopics({ topics: [...topics], timeout: 10_000 })),
    topicOffsets: (topic) =>
      call('fetchTopicOffsets', async () =>
        (await admin.fetchTopicOffsets(topic)).map((p) => ({ topic, partition: p.partition, low: BigInt(p.low), high: BigInt(p.high) })).sort(byPartition),
      ),
    committedOffsets: (groupId, topics) =>
      call('fetchOffsets', async () =>
        (await admin.fetchOffsets({ groupId, topics: [...topics] }))
          .flatMap((t) => t.partitions.map((p) => ({ topic: t.topic, partition: p.partition, offset: /^\d+$/.test(p.offset) ? p.offset : '-1' })))
          .sort(byPartition),
      ),
    setCommittedOffsets: (groupId, offsets) =>
      call('setOffsets', async () => {
        const byTopic = new Map<string, { partition: number; offset: string }[]>();
        for (const o of offsets) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), { partition: o.partition, offset: o.offset }]);
        for (const [topic, partitions] of byTopic) await admin.setOffsets({ groupId, topic, partitions });
      }),
    listGroups: () => call('listGroups', async () => (await admin.listGroups()).groups.map((g) => g.groupId)),
    deleteGroups: (groupIds) =>
      call('deleteGroups', async () => {
        if (groupIds.length > 0) await admin.deleteGroups([...groupIds]);
      }),
  };
}

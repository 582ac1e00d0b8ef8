import type { Logger } from '../logger.js';
import type { KafkaSecurity } from './security.js';

/**
 * What a Kafka client library must provide, in the wrapper's own types. One implementation per
 * library lives in `drivers/`; everything else in the code base sees only these shapes (and the
 * producer, batch consumer and admin helpers built on them), so switching the library is a
 * setting (`KAFKA_DRIVER`), and a contract suite (`contract/`) proves each driver keeps the
 * same promises.
 */
export const KAFKA_DRIVERS = ['kafkajs', 'platformatic'] as const;
export type KafkaDriverName = (typeof KAFKA_DRIVERS)[number];

export interface DriverMessage {
  key: string | Buffer | null;
  /** Null is a tombstone (deletes the key from a compacted topic). */
  value: string | Buffer | null;
  headers?: Record<string, string>;
  partition?: number;
}

export interface DriverTopicMessages {
  topic: string;
  messages: DriverMessage[];
}

export const COMPRESSIONS = ['none', 'gzip', 'lz4', 'zstd'] as const;
export type Compression = (typeof COMPRESSIONS)[number];

export interface DriverProducerOptions {
  /** Broker-side wait for the in-sync replicas (acks=all). */
  ackTimeoutMs: number;
  compression: Compression;
  /**
   * How long a send in flight may wait for the broker's answer, retries included: the caller
   * waits that long anyway, and a request given up early would leave its outcome unknown.
   */
  inFlightTimeoutMs?: number;
}

/**
 * An idempotent (acks=all) producer. `send` must not be called again before the previous call
 * settled: the wrapper's send coalescer serialises them (concurrent idempotent sends lose
 * messages or fail with OUT_OF_ORDER_SEQUENCE_NUMBER in some libraries).
 */
export interface DriverProducer {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  /**
   * Resolves once the broker acknowledged every message; rejects with a `KafkaError` once the
   * library gave up. The library retries with the same sequence numbers, so a retry of a
   * request that did reach the broker is not written twice.
   */
  send(batches: DriverTopicMessages[]): Promise<void>;
}

export interface ConsumedMessage {
  topic: string;
  partition: number;
  /** Kafka offsets are 64-bit; kept as decimal strings. */
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, string>;
  /** Broker/producer timestamp in epoch milliseconds. */
  timestamp: number;
}

export interface TopicPartitionOffset {
  topic: string;
  partition: number;
  /** The next offset to read, as a decimal string. */
  offset: string;
}

export interface DriverBatch {
  topic: string;
  partition: number;
  messages: ConsumedMessage[];
  /** Keeps the membership alive during long work (a no-op where the library heartbeats on its own). */
  heartbeat(): Promise<void>;
  /** False once the partition was revoked or the member rejoined since the batch was fetched. */
  isCurrent(): boolean;
}

export interface DriverConsumerOptions {
  groupId: string;
  topics: readonly string[];
  /** Where a group without a committed offset starts. */
  fromBeginning: boolean;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  maxBytesPerPartition: number;
  maxWaitTimeMs: number;
  /** Batches of different partitions handled at once. */
  partitionsConsumedConcurrently: number;
  logger: Logger;
  /** Handles one batch of one partition; never rejects. The driver fetches nothing more of that partition before it settled. */
  handleBatch(batch: DriverBatch): Promise<void>;
  /** A sign of life: a fetch, a heartbeat (the wrapper ends a session that shows none for long). */
  onActivity(): void;
  /** The member joined (or rejoined) the group with this assignment. */
  onJoin(assignment: Record<string, number[]>): void;
  /**
   * The session ended by itself (broker gone, member fenced, handler threw, ...). The session is
   * over for good: the wrapper stops it and starts a fresh one.
   */
  onCrash(error: unknown): void;
}

/** One membership of a consumer group: started once, stopped once. */
export interface DriverConsumer {
  /** Connects, subscribes and starts fetching; resolves once running (the join may follow). */
  start(): Promise<void>;
  /** Commits the offsets in one request; rejects with a `KafkaError` (retryable after a rebalance). */
  commit(offsets: readonly TopicPartitionOffset[]): Promise<void>;
  /** Leaves the group and closes the connections. Safe to call more than once. */
  stop(): Promise<void>;
}

export interface NewTopic {
  name: string;
  partitions: number;
  replicationFactor: number;
  config: Readonly<Record<string, string>>;
}

/** A partition's offsets: `low` is the first offset still in the log, `high` the next to be written. */
export interface PartitionRange {
  topic: string;
  partition: number;
  low: bigint;
  high: bigint;
}

/** One ACL entry that allows `principal` one operation on a resource (kafka/acls.ts builds them). */
export interface AclBinding {
  resourceType: 'topic' | 'group' | 'cluster';
  /** `kafka-cluster` for the cluster. */
  resourceName: string;
  patternType: 'literal' | 'prefixed';
  /** e.g. `User:ingest`. */
  principal: string;
  operation: 'READ' | 'WRITE' | 'DESCRIBE' | 'IDEMPOTENT_WRITE';
}

/** Kafka's wire values of the ACL enums (the same in every client library). */
export const ACL_WIRE = {
  resourceType: { topic: 2, group: 3, cluster: 4 },
  patternType: { literal: 3, prefixed: 4 },
  operation: { READ: 3, WRITE: 4, DESCRIBE: 8, IDEMPOTENT_WRITE: 12 },
  allow: 3,
} as const;

/** The admin operations the services and tools use, nothing more. Every failure is a `KafkaError`. */
export interface KafkaAdmin {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  listTopics(): Promise<string[]>;
  /** The ids of the brokers the cluster reports as live (fresh metadata). */
  brokerIds(): Promise<number[]>;
  /** Creates the topics without waiting for their leaders (see `partitionLeaders`). */
  createTopics(topics: readonly NewTopic[]): Promise<void>;
  /** The leader of every partition of each topic (-1 while there is none); a missing topic is left out. */
  partitionLeaders(topics: readonly string[]): Promise<Map<string, number[]>>;
  deleteTopics(topics: readonly string[]): Promise<void>;
  /** Low and high offsets of every partition of the topic. */
  topicOffsets(topic: string): Promise<PartitionRange[]>;
  /** The group's committed offset per partition of each topic ("-1" where it committed nothing). */
  committedOffsets(groupId: string, topics: readonly string[]): Promise<TopicPartitionOffset[]>;
  /** Sets committed offsets of a group that has no live member. */
  setCommittedOffsets(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void>;
  listGroups(): Promise<string[]>;
  deleteGroups(groupIds: readonly string[]): Promise<void>;
  /** Adds allow-ACLs (existing ones are left as they are, so it is idempotent); needs ALTER on the cluster. */
  createAcls(bindings: readonly AclBinding[]): Promise<void>;
  /** Removes exactly these allow-ACLs (absent ones are no error); needs ALTER on the cluster. */
  deleteAcls(bindings: readonly AclBinding[]): Promise<void>;
}

export interface KafkaClientOptions {
  brokers: string;
  clientId: string;
  logger: Logger;
  /** Which library; default `DEFAULT_KAFKA_DRIVER`. */
  driver?: KafkaDriverName;
  /** TLS and SASL (`resolveKafkaSecurity`); absent: plaintext, no authentication. */
  security?: KafkaSecurity;
  /** Upper bound for connecting; keeps failures fast when Kafka is down. */
  connectionTimeoutMs?: number;
  /** Upper bound for one request (a produce to a stalled broker gives up and is retried after it). */
  requestTimeoutMs?: number;
  /** Defaults of every consumer made with this client (see `ConsumerDefaults`). */
  sessionTimeoutMs?: number;
  consumerDeadAfterMs?: number;
}

export interface ConsumerDefaults {
  /** A member that misses heartbeats this long is dropped from its group. */
  sessionTimeoutMs: number;
  /** A consumer that cannot rejoin for this long reports itself dead (liveness fails). */
  deadAfterMs: number;
}

export function consumerDefaults(options: KafkaClientOptions): ConsumerDefaults {
  return { sessionTimeoutMs: options.sessionTimeoutMs ?? 30_000, deadAfterMs: options.consumerDeadAfterMs ?? 5 * 60_000 };
}

/**
 * A configured client library: the wrapper's producer, batch consumer and admin helpers take
 * one. Callers never reach the library behind it.
 */
export interface KafkaClient {
  readonly driver: KafkaDriverName;
  readonly clientId: string;
  readonly consumerDefaults: ConsumerDefaults;
  producer(options: DriverProducerOptions): DriverProducer;
  consumer(options: DriverConsumerOptions): DriverConsumer;
  /** A fresh admin connection; `withAdmin` connects and closes it around a piece of work. */
  admin(): KafkaAdmin;
}

/** Topic, then partition: admin answers come in the same order whatever the broker sent. */
export function byPartition(a: { topic: string; partition: number }, b: { topic: string; partition: number }): number {
  return a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition;
}

/**
 * The Kafka half of `ingest backup` / `ingest restore`: which topics a backup holds, and the
 * owner of their dump format (`kafka/<topic>.jsonl.gz`, one JSON line per record).
 *
 * A line is `{"p":partition,"o":"offset","ts":ms,"k":…,"v":…,"h":{…}}`. A key or value that is
 * valid UTF-8 is kept as text (`k`/`v`, readable with zcat), any other bytes as base64
 * (`k64`/`v64`); `"v":null` is a tombstone and is written back as one. Headers are kept as the
 * wrapper reads them (string values). Lines of one partition are in offset order.
 */
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { PassThrough, type Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip, createGzip } from 'node:zlib';
import {
  AppError,
  type ConsumedMessage,
  type KafkaClient,
  type Logger,
  type OutgoingMessage,
  type Producer,
  readTopicToEnd,
  TOPICS,
  type TopicKey,
  topicOffsets,
} from '@ingest/platform';

/** The record topics outside the control plane that a backup must hold (no other copy can rebuild them; the identity map's Redis index is rebuilt from `identities`). */
const RECORD_TOPICS: readonly string[] = [TOPICS.billingLedger.name, TOPICS.auditLog.name, TOPICS.identities.name];

/**
 * Every topic a backup holds: each compacted `control.*` topic (so a control topic added to
 * TOPICS is backed up without an edit here) plus the billing ledger, the audit log and the
 * identity map (docs/segment.md). The event
 * topics are left out on purpose: their contents are in ClickHouse, and they keep 7 days.
 */
export function backupTopicKeys(): TopicKey[] {
  return (Object.keys(TOPICS) as TopicKey[]).filter((key) => {
    const spec = TOPICS[key];
    const compactedControl = spec.name.startsWith('control.') && spec.config['cleanup.policy'] === 'compact';
    return compactedControl || RECORD_TOPICS.includes(spec.name);
  });
}

export interface DumpedRecord {
  p: number;
  o: string;
  ts: number;
  k?: string | null;
  k64?: string;
  v?: string | null;
  v64?: string;
  h?: Record<string, string>;
}

function isExactUtf8(bytes: Buffer): boolean {
  return Buffer.from(bytes.toString('utf8'), 'utf8').equals(bytes);
}

export function encodeRecord(m: ConsumedMessage): string {
  const record: DumpedRecord = { p: m.partition, o: m.offset, ts: m.timestamp };
  if (m.key === null) record.k = null;
  else if (isExactUtf8(m.key)) record.k = m.key.toString('utf8');
  else record.k64 = m.key.toString('base64');
  if (m.value === null) record.v = null;
  else if (isExactUtf8(m.value)) record.v = m.value.toString('utf8');
  else record.v64 = m.value.toString('base64');
  if (Object.keys(m.headers).length > 0) record.h = m.headers;
  return `${JSON.stringify(record)}\n`;
}

export interface DecodedRecord {
  partition: number;
  key: Buffer | null;
  /** Null: a tombstone. */
  value: Buffer | null;
  headers: Record<string, string>;
}

export function decodeRecord(line: string, where: string): DecodedRecord {
  let record: DumpedRecord;
  try {
    record = JSON.parse(line) as DumpedRecord;
  } catch (err) {
    throw new AppError('backup_corrupt', `${where}: not a JSON line`, { cause: err });
  }
  if (!Number.isInteger(record.p) || record.p < 0) throw new AppError('backup_corrupt', `${where}: no partition`);
  const bytes = (text: string | null | undefined, b64: string | undefined): Buffer | null =>
    b64 !== undefined ? Buffer.from(b64, 'base64') : typeof text === 'string' ? Buffer.from(text, 'utf8') : null;
  return { partition: record.p, key: bytes(record.k, record.k64), value: bytes(record.v, record.v64), headers: record.h ?? {} };
}

/** What the manifest says of one dumped topic. */
export interface TopicDump {
  /** Without the deployment's prefix. */
  name: string;
  file: string;
  partitions: number;
  records: number;
  tombstones: number;
  /** The end offset per partition the dump stopped at (records written later are not in it). */
  endOffsets: string[];
  sha256: string;
  bytes: number;
}

/** A pass-through that hashes and counts what goes to the file (the manifest's checksum). */
export function fileDigest(): { tap: Transform; result(): { sha256: string; bytes: number } } {
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new PassThrough();
  tap.on('data', (chunk: Buffer) => {
    hash.update(chunk);
    bytes += chunk.length;
  });
  return { tap, result: () => ({ sha256: hash.digest('hex'), bytes }) };
}

export interface DumpTopicOptions {
  kafka: KafkaClient;
  /** The topic's full name (with the prefix). */
  topic: string;
  name: string;
  path: string;
  file: string;
  logger: Logger;
  timeoutMs: number;
}

/** Reads the topic from its beginning to the end offsets it has now into a gzipped JSON-lines file (mode 0600). */
export async function dumpTopic(options: DumpTopicOptions): Promise<TopicDump> {
  const ranges = await topicOffsets(options.kafka, options.topic).catch((err: unknown) => {
    throw new AppError('backup_topic_unreadable', `topic ${options.topic} cannot be read (is KAFKA_TOPIC_PREFIX right, and did \`ingest setup\` run?)`, {
      cause: err,
    });
  });
  const ends = new Map(ranges.map((r) => [r.partition, r.high]));
  const gzip = createGzip();
  const digest = fileDigest();
  const written = pipeline(gzip, digest.tap, createWriteStream(options.path, { mode: 0o600, flags: 'wx' }));
  let records = 0;
  let tombstones = 0;
  const progress = setInterval(() => options.logger.info({ topic: options.name, records }, 'backup: reading topic'), 5_000);
  try {
    await readTopicToEnd(options.kafka, {
      topic: options.topic,
      logger: options.logger,
      timeoutMs: options.timeoutMs,
      onMessage: async (m) => {
        // Records written after the start are left out: the dump is the topic as it was then.
        if (BigInt(m.offset) >= (ends.get(m.partition) ?? 0n)) return;
        records++;
        if (m.value === null) tombstones++;
        if (!gzip.write(encodeRecord(m))) await once(gzip, 'drain');
      },
    });
  } finally {
    clearInterval(progress);
    gzip.end();
  }
  await written;
  return {
    name: options.name,
    file: options.file,
    partitions: ranges.length,
    records,
    tombstones,
    endOffsets: ranges.map((r) => r.high.toString()),
    ...digest.result(),
  };
}

/** Kafka refuses a record batch above the topic's max.message.bytes (1 MiB for audit.log): stay well below. */
const MAX_BATCH_BYTES = 256 * 1024;
const MAX_BATCH_RECORDS = 500;

export interface RestoreTopicOptions {
  producer: Producer;
  topic: string;
  name: string;
  path: string;
  logger: Logger;
}

/**
 * Writes the dumped records back in their order, each to the partition it came from (a target
 * topic with fewer partitions is refused before anything is written), tombstones as tombstones.
 * One batch in flight at a time, so a partition's records keep their order.
 */
export async function restoreTopic(options: RestoreTopicOptions): Promise<number> {
  const lines = createInterface({ input: createReadStream(options.path).pipe(createGunzip()), crlfDelay: Infinity });
  let batch: OutgoingMessage[] = [];
  let batchBytes = 0;
  let restored = 0;
  let lineNo = 0;
  let loggedAt = Date.now();
  const flush = async () => {
    if (batch.length === 0) return;
    await options.producer.send(options.topic, batch);
    restored += batch.length;
    batch = [];
    batchBytes = 0;
    if (Date.now() - loggedAt > 5_000) {
      loggedAt = Date.now();
      options.logger.info({ topic: options.name, restored }, 'restore: writing topic');
    }
  };
  for await (const line of lines) {
    lineNo++;
    if (line === '') continue;
    const record = decodeRecord(line, `${options.name} line ${lineNo}`);
    const size = (record.key?.length ?? 0) + (record.value?.length ?? 0) + 64;
    if (batch.length >= MAX_BATCH_RECORDS || (batch.length > 0 && batchBytes + size > MAX_BATCH_BYTES)) await flush();
    batch.push({
      key: record.key,
      // A null value is Kafka's tombstone; OutgoingMessage admits no null on purpose (every other
      // writer carries values), so this restore casts, as the control plane's write does.
      value: record.value === null ? (null as unknown as Buffer) : record.value,
      headers: record.headers,
      partition: record.partition,
    });
    batchBytes += size;
  }
  await flush();
  return restored;
}

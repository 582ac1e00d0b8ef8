/**
 * Real server: Kafka. The promises the rest of the code relies on, checked against every
 * driver of the wrapper (KAFKA_DRIVER=kafkajs|platformatic): what a send acknowledged is in the
 * log once; concurrent sends to one partition all land; batches are committed as the handler
 * says and a new member starts there; a rebalance never hands a committed message to another
 * member, and lets the batches being handled finish and commit before their partitions move; the admin operations the services use; keys, values and headers byte for byte.
 * The broker pause and restart cases stop the broker, so they are in contract.chaos.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createTestKafka, integrationEnv, type TestKafka, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { committedOffsets, deleteConsumerGroups, ensureTopics, skipGroupToEnd, topicOffsets } from '../admin.js';
import { withAdmin } from '../client.js';
import { createProducer, type OutgoingMessage, type Producer } from '../producer.js';
import { TOPICS, type TopicKey } from '../topics.js';
import { keyPartition } from '../drivers/partitioner.js';
import { CONTRACT_DRIVERS, numbered, readAll, recordingConsumer, repeated } from './contract.fixture.js';

const logger = testLogger();

describe.each(CONTRACT_DRIVERS)('Kafka wrapper contract (%s)', (driver) => {
  const open: { kafka: TestKafka; producer: Producer }[] = [];
  const stops: (() => Promise<void>)[] = [];

  /** Fresh topics (3 partitions each) and a connected producer, cleaned up after the test. */
  async function setup(keys: TopicKey[] = ['eventsUnique']): Promise<{ kafka: TestKafka; producer: Producer }> {
    const kafka = await createTestKafka(keys, integrationEnv(), driver);
    const producer = createProducer(kafka.kafka);
    await producer.connect();
    open.push({ kafka, producer });
    return { kafka, producer };
  }

  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop().catch(() => {});
    for (const { kafka, producer } of open.splice(0)) {
      await producer.disconnect().catch(() => {});
      await kafka.cleanup().catch(() => {});
    }
  });

  it('writes what a send acknowledged once, in the order sent (idempotent, acks=all)', async () => {
    const { kafka, producer } = await setup();
    const topic = kafka.topic('eventsUnique');
    for (let round = 0; round < 3; round++) await producer.send(topic, numbered('ordered', 100, undefined, round * 100));

    const read = await readAll(kafka.kafka, topic, logger);
    const values = read.map((m) => m.value?.toString() ?? '');
    expect(values.length).toBe(300);
    expect(repeated(values)).toEqual([]);
    // Per partition, in the order sent.
    for (const p of [0, 1, 2]) {
      const numbers = read.filter((m) => m.partition === p).map((m) => Number(m.value?.toString().split('-')[1]));
      expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    }
    const ends = await topicOffsets(kafka.kafka, topic);
    expect(ends.reduce((n, r) => n + Number(r.high - r.low), 0)).toBe(300);
  });

  it('puts a key on the partition the Java client would (murmur2), whichever driver wrote it', async () => {
    const { kafka, producer } = await setup();
    const topic = kafka.topic('eventsUnique');
    const keys = Array.from({ length: 60 }, (_, i) => `acc_${i % 7}:evt-${i}`);
    await producer.send(
      topic,
      keys.map((key) => ({ key, value: key })),
    );
    const read = await readAll(kafka.kafka, topic, logger);
    expect(read.filter((m) => m.partition !== keyPartition(m.key ?? '', 3)).map((m) => m.key?.toString())).toEqual([]);
    expect(read).toHaveLength(keys.length);
  });

  it('lands every one of many concurrent sends to one partition, at distinct offsets, none written twice', async () => {
    const { kafka, producer } = await setup();
    const topic = kafka.topic('eventsUnique');
    const n = 400;
    // One message per send, all at once: the wrapper must serialise them per producer
    // (concurrent idempotent sends were dropped silently or refused out of sequence by clients).
    await Promise.all(numbered('concurrent', n, 1).map((m) => producer.send(topic, [m])));

    const read = (await readAll(kafka.kafka, topic, logger)).filter((m) => m.partition === 1);
    const values = read.map((m) => m.value?.toString() ?? '');
    expect(new Set(values).size).toBe(n);
    expect(repeated(values)).toEqual([]);
    expect(new Set(read.map((m) => m.offset)).size).toBe(n);
    const range = (await topicOffsets(kafka.kafka, topic)).find((r) => r.partition === 1);
    expect(range && Number(range.high - range.low)).toBe(n);
  });

  it('hands over batches and commits what the handler says: after the batch, an earlier offset, or nothing', async () => {
    const { kafka, producer } = await setup();
    const topic = kafka.topic('eventsUnique');
    for (const p of [0, 1, 2]) await producer.send(topic, numbered(`p${p}`, 20, p));
    const groupId = `contract-commit-${uniqueSuffix()}`;
    const r = recordingConsumer(kafka.kafka, {
      groupId,
      topics: [topic],
      logger,
      partitionsConsumedConcurrently: 3,
      handle: async (_messages, ctx) => (ctx.partition === 0 ? undefined : ctx.partition === 1 ? { commitOffset: '7' } : { commitOffset: null }),
    });
    stops.push(() => r.consumer.stop());
    await r.consumer.start();
    await waitFor(() => r.seen.length >= 60, { description: '60 messages handled' });
    await waitFor(async () => (await committedOffsets(kafka.kafka, groupId, topic)).get(0) === '20', { description: 'partition 0 committed at 20' });
    await r.consumer.stop();

    const committed = await committedOffsets(kafka.kafka, groupId, topic);
    expect([committed.get(0), committed.get(1), committed.get(2)]).toEqual(['20', '7', '-1']);
    expect(Math.max(...r.batches)).toBeGreaterThan(1);
    expect(r.seen.length).toBe(60);
  });

  it('starts a new member of the group at the committed offset', async () => {
    const { kafka, producer } = await setup();
    const topic = kafka.topic('eventsUnique');
    await producer.send(topic, numbered('before', 20, 0));
    const groupId = `contract-resume-${uniqueSuffix()}`;
    const first = recordingConsumer(kafka.kafka, { groupId, topics: [topic], logger });
    await first.consumer.start();
    await waitFor(() => first.seen.length >= 20, { description: 'the first member read 20' });
    await first.consumer.stop();
    expect((await committedOffsets(kafka.kafka, groupId, topic)).get(0)).toBe('20');

    await producer.send(topic, numbered('after', 10, 0));
    const second = recordingConsumer(kafka.kafka, { groupId, topics: [topic], logger });
    stops.push(() => second.consumer.stop());
    await second.consumer.start();
    await waitFor(() => second.seen.length >= 10, { description: 'the second member read the 10 new ones' });
    expect(second.seen.map((m) => m.offset)).toEqual(Array.from({ length: 10 }, (_, i) => String(20 + i)));
    expect(second.values()).toEqual(numbered('after', 10).map((m) => m.value));
  });

  it('rebalances between two members without handing a committed message to the other, and finishes its batches first', async () => {
    const { kafka, producer } = await setup();
    const topic = kafka.topic('eventsUnique');
    const groupId = `contract-rebalance-${uniqueSuffix()}`;
    // Time-ordered log of what each member processed and which commits succeeded (a commit
    // resolves only once the broker took it; one refused after the rebalance rejects).
    const log: ({ member: string; partition: number } & ({ kind: 'processed'; offset: bigint } | { kind: 'committed'; next: bigint }))[] = [];
    const member = (name: string) => {
      const r = recordingConsumer(kafka.kafka, {
        groupId,
        topics: [topic],
        logger,
        partitionsConsumedConcurrently: 3,
        handle: async (messages, ctx) => {
          for (const m of messages) log.push({ member: name, partition: m.partition, kind: 'processed', offset: BigInt(m.offset) });
          // Work that takes a while, so the rebalance lands while batches are being handled.
          await new Promise((resolve) => setTimeout(resolve, 30));
          const next = BigInt(messages.at(-1)?.offset ?? '0') + 1n;
          const ok = await r.consumer.commit(ctx.topic, ctx.partition, next.toString()).then(
            () => true,
            () => false,
          );
          if (ok) log.push({ member: name, partition: ctx.partition, kind: 'committed', next });
          return { commitOffset: null };
        },
      });
      stops.push(() => r.consumer.stop());
      return r;
    };
    // A steady stream (a few messages per partition every few ms) all through the rebalance.
    let sent = 0;
    let streaming = true;
    const stream = (async () => {
      while (streaming) {
        await producer.send(topic, numbered('m', 6, undefined, sent));
        sent += 6;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const a = member('a');
    await a.consumer.start();
    await waitFor(() => a.seen.length >= 30, { description: 'member a busy' });
    const b = member('b');
    await b.consumer.start();
    await waitFor(() => b.seen.length >= 30 && (a.consumer.assignments()[topic] ?? []).length < 3, {
      description: 'member b took partitions over and is busy',
    });
    streaming = false;
    await stream;
    await waitFor(
      () => {
        const processed = new Set([...a.values(), ...b.values()]).size;
        if (processed < sent) throw new Error(`${processed} of ${sent} processed`);
        return true;
      },
      { description: 'every message processed', timeoutMs: 60_000 },
    );

    // A message processed after another member's commit covered it would be processed twice
    // although its first processing was durable.
    const violations: string[] = [];
    log.forEach((entry, i) => {
      if (entry.kind !== 'processed') return;
      const coveredBefore = log
        .slice(0, i)
        .find((c) => c.kind === 'committed' && c.member !== entry.member && c.partition === entry.partition && c.next > entry.offset);
      if (coveredBefore) violations.push(`${entry.member} processed ${entry.partition}/${entry.offset} after ${coveredBefore.member} committed it`);
    });
    expect(violations).toEqual([]);
    // Revoke, wait, commit, rejoin: the batches a was handling when the rebalance began finished
    // and committed before their partitions moved, so b, taking over, processed none of them
    // again (a commit refused after the rejoin would have made b read them once more).
    const byA = new Set(a.values());
    expect(b.values().filter((v) => byA.has(v))).toEqual([]);
    // The partitions b took over had been a's: the rebalance happened under load.
    expect([...new Set(b.seen.map((m) => m.partition))].some((p) => a.seen.some((m) => m.partition === p))).toBe(true);
  });

  it('does the admin operations the services use', async () => {
    const { kafka, producer } = await setup();
    const prefix = `${kafka.prefix}admin.`;
    const specs = [{ ...TOPICS.jobProgress, partitions: 2 }];
    expect(await ensureTopics(kafka.kafka, { prefix, specs, logger })).toEqual([`${prefix}jobs.progress`]);
    // Idempotent: a second run creates nothing.
    expect(await ensureTopics(kafka.kafka, { prefix, specs, logger })).toEqual([]);
    const topic = `${prefix}jobs.progress`;
    stops.push(() => withAdmin(kafka.kafka, (admin) => admin.deleteTopics([topic])));
    await withAdmin(kafka.kafka, async (admin) => {
      expect(await admin.listTopics()).toContain(topic);
      const leaders = await admin.partitionLeaders([topic]);
      expect(leaders.get(topic)?.length).toBe(2);
      expect(leaders.get(topic)?.every((l) => l >= 0)).toBe(true);
      // Every leader is one of the brokers the cluster reports (what setup counts against the replication factor).
      const brokers = await admin.brokerIds();
      expect(brokers.length).toBeGreaterThan(0);
      expect(leaders.get(topic)?.every((l) => brokers.includes(l))).toBe(true);
    });

    await producer.send(topic, numbered('admin', 5, 1));
    expect((await topicOffsets(kafka.kafka, topic)).map((r) => [r.partition, r.low, r.high])).toEqual([
      [0, 0n, 0n],
      [1, 0n, 5n],
    ]);
    const groupId = `contract-admin-${uniqueSuffix()}`;
    expect([...(await committedOffsets(kafka.kafka, groupId, topic))]).toEqual([
      [0, '-1'],
      [1, '-1'],
    ]);
    // A group moved to the end reads only what comes later.
    await skipGroupToEnd(kafka.kafka, groupId, topic);
    expect([...(await committedOffsets(kafka.kafka, groupId, topic))]).toEqual([
      [0, '0'],
      [1, '5'],
    ]);
    await producer.send(topic, numbered('later', 2, 1));
    const r = recordingConsumer(kafka.kafka, { groupId, topics: [topic], logger });
    await r.consumer.start();
    await waitFor(() => r.seen.length >= 2, { description: 'the two later messages' });
    await r.consumer.stop();
    expect(r.values()).toEqual(['later-0', 'later-1']);

    expect(await withAdmin(kafka.kafka, (admin) => admin.listGroups())).toContain(groupId);
    expect(await deleteConsumerGroups(kafka.kafka, (g) => g === groupId)).toEqual([groupId]);
    expect(await withAdmin(kafka.kafka, (admin) => admin.listGroups())).not.toContain(groupId);

    await withAdmin(kafka.kafka, (admin) => admin.deleteTopics([topic]));
    await waitFor(async () => !(await withAdmin(kafka.kafka, (admin) => admin.listTopics())).includes(topic), { description: 'the topic deleted' });
  });

  it('gives back keys, values and headers byte for byte', async () => {
    const { kafka, producer } = await setup();
    const topic = kafka.topic('eventsUnique');
    const everyByte = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const sent: OutgoingMessage[] = [
      {
        key: everyByte,
        value: Buffer.concat([everyByte, everyByte]),
        headers: { 'ingest-identity': 'ünïcødé@例え.jp', empty: '', 'x-bytes': 'a\u0000b' },
        partition: 0,
      },
      { key: 'acc_1:évènement-😀', value: '{"name":"naïve ✓"}', headers: {}, partition: 0 },
      { key: null, value: Buffer.alloc(0), headers: { only: 'header' }, partition: 0 },
      { key: '', value: 'x'.repeat(100_000), partition: 0 },
    ];
    await producer.send(topic, sent);
    const read = (await readAll(kafka.kafka, topic, logger)).filter((m) => m.partition === 0);
    expect(read).toHaveLength(sent.length);
    read.forEach((m, i) => {
      const s = sent[i];
      if (!s) throw new Error('more read than sent');
      expect(m.key === null ? null : Buffer.from(m.key)).toEqual(s.key === null ? null : Buffer.from(s.key));
      expect(Buffer.from(m.value ?? Buffer.alloc(0)).equals(Buffer.from(s.value))).toBe(true);
      expect(m.headers).toEqual(s.headers ?? {});
      expect(Math.abs(m.timestamp - Date.now())).toBeLessThan(60_000);
    });
  });
});

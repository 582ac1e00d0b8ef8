/**
 * Real server: Kafka. Stopping a session of the platformatic consumer whose member has lost its
 * id (what a member fenced after a broker stall looks like): @platformatic/kafka's close leaves
 * the message stream running then, clears the consumer's topics, and the stream's next fetch
 * throws a TypeError from a library callback, where nothing can catch it (the processor, and in
 * one run the crm-sink, exited in the broker-pause chaos test; the crm-sink's handler was busy and
 * its stream full, so no fetch was in flight for the close to fail). The driver closes the stream
 * itself first.
 */
import { Consumer, type MessagesStream, Producer } from '@platformatic/kafka';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestKafka, integrationEnv, type TestKafka, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { brokerList } from '../../config.js';
import { createPlatformaticConsumer } from './platformatic.consumer.js';

const MAX_WAIT_MS = 100;
/** More than the driver's stream buffers (its high-water mark is 4,096 messages): the stream fills and stops fetching. */
const MESSAGES = 20_000;

let kafka: TestKafka;
const uncaught: unknown[] = [];
const recordUncaught = (err: unknown) => uncaught.push(err);

beforeAll(async () => {
  kafka = await createTestKafka(['eventsRaw']);
  const producer = new Producer({ clientId: `stop-${uniqueSuffix()}`, bootstrapBrokers: brokerList(integrationEnv().kafkaBrokers) });
  try {
    for (let i = 0; i < MESSAGES; i += 500)
      await producer.send({
        messages: Array.from({ length: 500 }, (_, j) => ({ topic: kafka.topic('eventsRaw'), key: Buffer.from(`k${i + j}`), value: Buffer.from('{}') })),
      });
  } finally {
    await producer.close();
  }
});

afterAll(async () => {
  await kafka?.cleanup();
});

afterEach(() => {
  process.removeListener('uncaughtException', recordUncaught);
  uncaught.length = 0;
});

/** The library consumer behind the next `consume()`, and the stream it opens. */
function captureNextConsumer(): Promise<{ consumer: Consumer; stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> }> {
  const consume = Consumer.prototype.consume;
  return new Promise((resolve) => {
    Consumer.prototype.consume = function (this: Consumer, ...args: Parameters<typeof consume>) {
      Consumer.prototype.consume = consume;
      const opened = consume.apply(this, args) as unknown as Promise<MessagesStream<Buffer, Buffer, Buffer, Buffer>>;
      void opened.then((stream) => resolve({ consumer: this as Consumer, stream }));
      return opened as unknown as ReturnType<typeof consume>;
    } as typeof consume;
  });
}

describe('stopping a platformatic consumer session whose member lost its id', () => {
  it('closes the message stream, and nothing is thrown from a library callback afterwards', async () => {
    const base = { clientId: `stop-${uniqueSuffix()}`, bootstrapBrokers: brokerList(integrationEnv().kafkaBrokers) };
    const joined: Record<string, number[]>[] = [];
    /** The handler is busy until the test lets it go: what a CRM call during the stall looks like. */
    let release = () => {};
    const busy = new Promise<void>((resolve) => (release = resolve));
    let batches = 0;
    const captured = captureNextConsumer();
    const session = createPlatformaticConsumer(base, {
      groupId: `stop-${uniqueSuffix()}`,
      topics: [kafka.topic('eventsRaw')],
      fromBeginning: true,
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 1_000,
      // Small fetches, so that the stream fills over several of them.
      maxBytesPerPartition: 8 * 1024,
      maxWaitTimeMs: MAX_WAIT_MS,
      partitionsConsumedConcurrently: 1,
      logger: testLogger(),
      handleBatch: async () => {
        batches++;
        await busy;
      },
      onActivity: () => {},
      onJoin: (assignment) => joined.push(assignment),
      onCrash: () => {},
    });
    await session.start();
    const { consumer, stream } = await captured;
    await waitFor(() => joined.length > 0 && batches > 0, { description: 'the member joined and its handler is busy', timeoutMs: 30_000 });
    await waitFor(() => stream.readableLength >= 4_096, { description: `the stream full (${stream.readableLength} messages buffered)`, timeoutMs: 30_000 });
    process.prependListener('uncaughtException', recordUncaught);

    // What the library leaves behind when a broker stall fenced the member.
    (consumer as unknown as { memberId: string | null }).memberId = null;
    await session.stop();
    expect(stream.destroyed || stream.closed).toBe(true);

    // The handler finishes, and the driver reads on from the stream, which would fetch again.
    release();
    await new Promise((resolve) => setTimeout(resolve, 20 * MAX_WAIT_MS));
    expect(uncaught.map(String)).toEqual([]);
  });
});

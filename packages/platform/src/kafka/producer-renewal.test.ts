/**
 * The producer after a failed send, with scripted drivers: it continues on a new producer (a new
 * producer id), sends made while none can connect fail unwritten, and readiness and liveness
 * say the truth in between. The real brokers' side of it: services/processor/src/chaos/broker-pause.chaos.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { DriverProducer, DriverTopicMessages, KafkaClient } from './driver.js';
import { KafkaError, toKafkaError } from './errors.js';
import { kafkajsTraits } from './drivers/kafkajs.client.js';
import { platformaticTraits } from './drivers/platformatic.client.js';
import { createProducer } from './producer.js';

interface ScriptedProducer extends DriverProducer {
  id: number;
  sent: DriverTopicMessages[][];
  connected: boolean;
  disconnected: boolean;
}

/** Each `producer()` call makes the next instance; `failSendsOf` / `refuseConnects` script them. */
function scriptedKafka() {
  const made: ScriptedProducer[] = [];
  const script = { failSendsOf: new Map<number, unknown>(), refuseConnects: false, hangSendsOf: new Map<number, Promise<void>>() };
  const kafka = {
    producer: () => {
      const p: ScriptedProducer = {
        id: made.length,
        sent: [],
        connected: false,
        disconnected: false,
        connect: async () => {
          if (script.refuseConnects) throw new KafkaError('kafka_unavailable', 'connect ECONNREFUSED', { retryable: true });
          p.connected = true;
        },
        disconnect: async () => {
          p.disconnected = true;
        },
        send: async (batches) => {
          p.sent.push(batches);
          await script.hangSendsOf.get(p.id);
          const failure = script.failSendsOf.get(p.id);
          if (failure !== undefined) throw failure;
        },
      };
      made.push(p);
      return p;
    },
  } as unknown as KafkaClient;
  return { kafka, made, script };
}

const outOfOrder = () =>
  toKafkaError(
    'kafka send failed',
    Object.assign(
      new AggregateError(
        [Object.assign(new Error('out of order'), { code: 'PLT_KFK_RESPONSE', apiId: 'OUT_OF_ORDER_SEQUENCE_NUMBER', canRetry: false })],
        'Producing messages failed.',
      ),
      {
        code: 'PLT_KFK_MULTIPLE',
      },
    ),
    platformaticTraits,
  );

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: KafkaError) => e.code,
  );
const until = async (condition: () => boolean) => {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(condition()).toBe(true);
};
const msg = [{ key: 'k', value: 'v' }];

describe('producer-state errors', () => {
  it('are their own code for both drivers, and retryable', () => {
    expect(outOfOrder()).toMatchObject({ code: 'kafka_producer_state', retryable: true });
    const kafkajs = Object.assign(new Error('retries exceeded'), {
      name: 'KafkaJSNonRetriableError',
      cause: Object.assign(new Error('aggregate'), {
        name: 'KafkaJSAggregateError',
        errors: [
          Object.assign(new Error('The broker received an out of order sequence number'), {
            name: 'KafkaJSProtocolError',
            type: 'OUT_OF_ORDER_SEQUENCE_NUMBER',
            retriable: false,
          }),
        ],
      }),
    });
    expect(toKafkaError('kafka send failed', kafkajs, kafkajsTraits)).toMatchObject({ code: 'kafka_producer_state', retryable: true });
    for (const type of ['UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED']) {
      expect(toKafkaError('x', Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type }), kafkajsTraits).code).toBe('kafka_producer_state');
      expect(toKafkaError('x', Object.assign(new Error(type), { code: 'PLT_KFK_RESPONSE', apiId: type }), platformaticTraits).code).toBe(
        'kafka_producer_state',
      );
    }
  });
});

describe('a producer after a failed send', () => {
  it('answers outcome unknown (the gateway 504s), never an internal error, for a producer-state error', async () => {
    const { kafka, script } = scriptedKafka();
    script.failSendsOf.set(0, outOfOrder());
    const producer = createProducer(kafka);
    await producer.connect();
    const failed = await producer.send('t', msg).catch((e: KafkaError) => e);
    expect(failed).toMatchObject({ code: 'kafka_outcome_unknown', retryable: true, cause: { code: 'kafka_producer_state' } });
  });

  it('continues on a new producer: the failed one is closed and never sent on again', async () => {
    const { kafka, made, script } = scriptedKafka();
    script.failSendsOf.set(0, outOfOrder());
    const renewed: string[] = [];
    const producer = createProducer(kafka, { onRenewed: (reason) => renewed.push(reason) });
    await producer.connect();
    expect(await codeOf(producer.send('t', msg))).toBe('kafka_outcome_unknown');
    expect(await codeOf(producer.send('t', msg))).toBe('ok');
    expect(await codeOf(producer.send('t', msg))).toBe('ok');
    expect(made.map((p) => ({ sends: p.sent.length, connected: p.connected, disconnected: p.disconnected }))).toEqual([
      { sends: 1, connected: true, disconnected: true },
      { sends: 2, connected: true, disconnected: false },
    ]);
    expect(renewed).toEqual(['kafka_producer_state']);
    expect(producer.ready()).toBe(true);
  });

  it('renews after any failed send (a timeout may have been written on the broker all the same)', async () => {
    const { kafka, made, script } = scriptedKafka();
    script.failSendsOf.set(0, Object.assign(new Error('Request timed out'), { code: 'PLT_KFK_TIMEOUT' }));
    const producer = createProducer(kafka);
    await producer.connect();
    expect(await codeOf(producer.send('t', msg))).toBe('kafka_outcome_unknown');
    expect(await codeOf(producer.send('t', msg))).toBe('ok');
    expect(made[1]?.sent).toHaveLength(1);
  });

  it('answers unwritten (503) while no new producer can connect, not ready meanwhile, ready again by itself once one connects', async () => {
    const { kafka, made, script } = scriptedKafka();
    script.failSendsOf.set(0, outOfOrder());
    const producer = createProducer(kafka, { sendTimeoutMs: 100, inFlightTimeoutMs: 500 });
    await producer.connect();
    script.refuseConnects = true;
    expect(await codeOf(producer.send('t', msg))).toBe('kafka_outcome_unknown');
    expect(producer.ready()).toBe(false);
    expect(await codeOf(producer.send('t', msg))).toBe('kafka_unavailable');
    // Nothing reached any producer while none could connect.
    expect(made.reduce((n, p) => n + p.sent.length, 0)).toBe(1);
    script.refuseConnects = false;
    // No traffic needed: the replacement keeps trying in the background.
    await until(() => producer.ready());
    expect(await codeOf(producer.send('t', msg))).toBe('ok');
    await producer.disconnect();
  });

  it('is not alive once it could not send for deadAfterMs', async () => {
    const { kafka, script } = scriptedKafka();
    let clock = 1_000_000;
    script.failSendsOf.set(0, outOfOrder());
    const producer = createProducer(kafka, { sendTimeoutMs: 50, inFlightTimeoutMs: 100, deadAfterMs: 60_000, now: () => clock });
    await producer.connect();
    script.refuseConnects = true;
    await producer.send('t', msg).catch(() => {});
    expect({ ready: producer.ready(), alive: producer.alive() }).toEqual({ ready: false, alive: true });
    clock += 60_001;
    expect({ ready: producer.ready(), alive: producer.alive() }).toEqual({ ready: false, alive: false });
    await producer.disconnect();
  });

  it('is not ready while a send has been in flight longer than the send timeout (a stalled broker)', async () => {
    const { kafka, script } = scriptedKafka();
    let clock = 1_000_000;
    const producer = createProducer(kafka, { sendTimeoutMs: 1_000, inFlightTimeoutMs: 30_000, now: () => clock });
    await producer.connect();
    script.hangSendsOf.set(0, new Promise(() => {}));
    void producer.send('t', msg).catch(() => {});
    await new Promise((r) => setTimeout(r, 10));
    expect(producer.ready()).toBe(true);
    clock += 1_001;
    expect(producer.ready()).toBe(false);
  });

  it('gives a send up at the in-flight deadline and continues on a new producer at once; settled() still waits for the library call', async () => {
    const { kafka, made, script } = scriptedKafka();
    let release = () => {};
    script.hangSendsOf.set(0, new Promise<void>((resolve) => (release = resolve)));
    const producer = createProducer(kafka, { sendTimeoutMs: 50, inFlightTimeoutMs: 100 });
    await producer.connect();
    expect(await codeOf(producer.send('t', msg))).toBe('kafka_outcome_unknown');
    expect(await codeOf(producer.send('t', msg))).toBe('ok');
    expect(made.map((p) => [p.sent.length, p.disconnected])).toEqual([
      [1, true],
      [1, false],
    ]);
    let settled = false;
    const settling = producer.settled().then(() => (settled = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    release();
    await settling;
    expect(settled).toBe(true);
  });
});

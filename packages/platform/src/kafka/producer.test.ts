/**
 * What a failed send tells its caller, with a scripted driver: a send that never reached a
 * broker is "not written" (kafka_unavailable, the gateway's 503), anything else that failed in
 * flight is "maybe written" (kafka_outcome_unknown, the gateway's 504).
 */
import { MultipleErrors, NetworkError } from '@platformatic/kafka';
import { describe, expect, it } from 'vitest';
import type { DriverTopicMessages, KafkaClient } from './driver.js';
import { kafkajsSendTraits } from './drivers/kafkajs.client.js';
import { platformaticTraits } from './drivers/platformatic.client.js';
import { connectionRefused, KafkaError, toKafkaError } from './errors.js';
import { createProducer } from './producer.js';

function refused(port: number): Error {
  return Object.assign(new Error(`connect ECONNREFUSED 127.0.0.1:${port}`), { code: 'ECONNREFUSED' });
}

/** kafkajs: the last attempt's connection error, wrapped in "retries exceeded". */
const kafkajsRefused = () =>
  Object.assign(new Error('retries exceeded'), {
    name: 'KafkaJSNumberOfRetriesExceeded',
    cause: Object.assign(new Error('Connection error'), { code: 'ECONNREFUSED' }),
  });
/** @platformatic/kafka: every attempt in an aggregate, each a NetworkError caused by the socket error. */
const platformaticAttempts = (...causes: Error[]) =>
  Object.assign(
    new AggregateError(
      causes.map((cause) => Object.assign(new Error('Connection to 127.0.0.1:9092 failed.'), { code: 'PLT_KFK_NETWORK', cause })),
      'produce failed 3 times.',
    ),
    { code: 'PLT_KFK_MULTIPLE' },
  );
const timeout = () => Object.assign(new Error('Request timed out'), { code: 'PLT_KFK_TIMEOUT' });

function producerFailingWith(err: unknown) {
  const sent: DriverTopicMessages[][] = [];
  const kafka = {
    producer: () => ({
      connect: async () => {},
      disconnect: async () => {},
      send: async (batches: DriverTopicMessages[]) => {
        sent.push(batches);
        throw err;
      },
    }),
  } as unknown as KafkaClient;
  return createProducer(kafka, { sendTimeoutMs: 1_000, inFlightTimeoutMs: 2_000 });
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: KafkaError) => e.code,
  );

/**
 * What @platformatic/kafka 1.35's Producer.send rejects with when a leader fails: per leader, its
 * attempts in a MultipleErrors (`produce failed N times.`); the leaders that failed in one
 * MultipleErrors (`Producing messages failed.`), and on it `produced.offsets`, the partitions the
 * other leaders wrote. Wrapped as the driver's `send` wraps it.
 */
function platformaticSendError(attemptsPerFailedLeader: Error[][], written: { topic: string; partition: number; offset: bigint }[]) {
  const leaders = attemptsPerFailedLeader.map((attempts) => new MultipleErrors(`produce failed ${attempts.length} times.`, attempts));
  const err = Object.assign(new MultipleErrors('Producing messages failed.', leaders), { produced: { offsets: written } });
  return toKafkaError('kafka send failed', err, platformaticTraits);
}
const connectFailed = (port: number) => new NetworkError(`Connection to 127.0.0.1:${port} failed.`, { cause: refused(port) });
/** What a request on a connection gets when the broker dies with it in flight. */
const closedInFlight = () => new NetworkError('Connection closed');

describe('a send to a cluster with one broker down (the broker-kill scale test)', () => {
  const msg = [{ key: 'k', value: 'v' }];

  it('is outcome unknown when the live leaders wrote their part and the dead one refused every attempt', async () => {
    const err = platformaticSendError(
      [[connectFailed(9293), connectFailed(9293), connectFailed(9293), connectFailed(9293)]],
      [
        { topic: 't', partition: 1, offset: 10n },
        { topic: 't', partition: 2, offset: 12n },
      ],
    );
    expect(await codeOf(producerFailingWith(err).send('t', msg))).toBe('kafka_outcome_unknown');
  });

  it('is outcome unknown when an attempt was on the dead leader as it died and the retries were refused', async () => {
    const err = platformaticSendError([[closedInFlight(), connectFailed(9293), connectFailed(9293), connectFailed(9293)]], []);
    expect(await codeOf(producerFailingWith(err).send('t', msg))).toBe('kafka_outcome_unknown');
  });

  it('is nothing written (503) only when every leader of the send refused every attempt and none wrote', async () => {
    const err = platformaticSendError(
      [
        [connectFailed(9292), connectFailed(9292)],
        [connectFailed(9293), connectFailed(9293)],
      ],
      [],
    );
    expect(await codeOf(producerFailingWith(err).send('t', msg))).toBe('kafka_unavailable');
  });

  it('with kafkajs, a refusal is never "nothing written": it reports only the last error of one leader', async () => {
    const err = toKafkaError('kafka send failed', kafkajsRefused(), kafkajsSendTraits);
    expect(await codeOf(producerFailingWith(err).send('t', msg))).toBe('kafka_outcome_unknown');
  });
});

describe('producer failure classes', () => {
  it('tells a refused connection from an open outcome', () => {
    expect(connectionRefused(kafkajsRefused())).toBe(true);
    expect(connectionRefused(platformaticAttempts(refused(1), refused(2), refused(3)))).toBe(true);
    // One attempt timed out before the broker went away: it may have landed.
    expect(connectionRefused(platformaticAttempts(timeout(), refused(2)))).toBe(false);
    expect(connectionRefused(timeout())).toBe(false);
    expect(connectionRefused(new Error('no code'))).toBe(false);
  });

  it('answers kafka_unavailable (nothing written) when no attempt reached a broker', async () => {
    expect(await codeOf(producerFailingWith(platformaticAttempts(refused(1), refused(2))).send('t', [{ key: 'k', value: 'v' }]))).toBe('kafka_unavailable');
  });

  it('answers kafka_outcome_unknown when a send failed in flight', async () => {
    expect(await codeOf(producerFailingWith(platformaticAttempts(timeout(), timeout())).send('t', [{ key: 'k', value: 'v' }]))).toBe('kafka_outcome_unknown');
  });

  it('passes a refusal the library calls final through unchanged', async () => {
    const tooLarge = new KafkaError('kafka_error', 'MESSAGE_TOO_LARGE', { retryable: false });
    expect(await codeOf(producerFailingWith(tooLarge).send('t', [{ key: 'k', value: 'v' }]))).toBe('kafka_error');
  });
});

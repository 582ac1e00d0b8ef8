import zlib from 'node:zlib';
import { type BaseOptions, ConnectionPool, type MessageToProduce, ProduceAcks, Producer } from '@platformatic/kafka';
import { brokerList } from '../../config.js';
import { consumerDefaults, type DriverMessage, type DriverProducer, type DriverProducerOptions, type KafkaClient, type KafkaClientOptions } from '../driver.js';
import { type ErrorTraits, findTlsFailure, PRODUCER_STATE_ERRORS, wrapErrors } from '../errors.js';
import type { KafkaSecurity } from '../security.js';
import { createPlatformaticAdmin } from './platformatic.admin.js';
import { createPlatformaticConsumer } from './platformatic.consumer.js';
import { completeMetadataAnswers } from './platformatic.metadata.js';
import { murmur2 } from './partitioner.js';

/**
 * @platformatic/kafka 1.35 asks its pool for the connection of a broker its metadata does not
 * know (yet), e.g. the group coordinator right after a broker stall (consumer.js:
 * `metadata.brokers.get(coordinatorId)`), and the pool then throws a TypeError from a callback no
 * caller can catch (seen once in the contract chaos test). An unknown broker is answered as an
 * error instead, which the library's retry or the consumer's new session handles.
 */
const poolGet = ConnectionPool.prototype.get as (this: ConnectionPool, broker: unknown, callback?: (error: Error | null, value?: unknown) => void) => unknown;
(ConnectionPool.prototype as unknown as { get: typeof poolGet }).get = function (this: ConnectionPool, broker, callback) {
  if (broker !== undefined && broker !== null) return poolGet.call(this, broker, callback);
  const error = new Error('no connection to a broker the cluster metadata does not name (yet)');
  if (callback) {
    queueMicrotask(() => callback(error));
    return undefined;
  }
  return Promise.reject(error);
};

/**
 * @platformatic/kafka 1.x: pure JavaScript, maintained, the 1.x line runs on Node 20 (2.x needs
 * Node 22+). Keys, values and headers go through as Buffers (no serialisers).
 */
export function createPlatformaticClient(options: KafkaClientOptions): KafkaClient {
  const base: BaseOptions = {
    clientId: options.clientId,
    bootstrapBrokers: brokerList(options.brokers),
    connectTimeout: options.connectionTimeoutMs ?? 3_000,
    requestTimeout: options.requestTimeoutMs ?? 10_000,
    // Bounded: four attempts about a request timeout apart outlast a broker stalled for ~30 s.
    retries: 3,
    retryDelay: 250,
    // Topics are provisioned by setup, never by a typo in a producer.
    autocreateTopics: false,
    // Fresh metadata at least this often: partition leaders move after a broker restart.
    metadataMaxAge: 5_000,
    ...platformaticSecurity(options.security),
  };
  return {
    driver: 'platformatic',
    clientId: options.clientId,
    consumerDefaults: consumerDefaults(options),
    producer: (producerOptions) => createPlatformaticProducer(base, producerOptions),
    consumer: (consumerOptions) => createPlatformaticConsumer(base, consumerOptions),
    admin: () => createPlatformaticAdmin(base),
  };
}

type AuthBytesValidator = NonNullable<NonNullable<BaseOptions['sasl']>['authBytesValidator']>;

/**
 * A broker that refuses an OAUTHBEARER token answers the authentication with an error document
 * (`{"status":"invalid_token"}`, RFC 7628) rather than an error code. The library (1.35) takes
 * any answer for success unless told otherwise, and the connection's next request then fails
 * as "not valid given the current SASL state", which reads like a protocol error. Checked here,
 * the refusal is an authentication failure: the start-up check names the token file.
 */
export const refusedTokenCheck: AuthBytesValidator = (authBytes, callback) => {
  let status: unknown;
  try {
    status = authBytes.length > 0 ? (JSON.parse(authBytes.toString('utf8')) as { status?: unknown }).status : undefined;
  } catch {
    status = undefined;
  }
  if (status === undefined) callback(null, authBytes);
  else callback(new Error(`the broker refused the token (${String(status)})`), authBytes);
};

/** TLS and SASL in the library's options (it supports PLAIN, SCRAM-SHA-256/512 and OAUTHBEARER). */
export function platformaticSecurity(security: KafkaSecurity | undefined): Pick<BaseOptions, 'tls' | 'sasl'> {
  const options: Pick<BaseOptions, 'tls' | 'sasl'> = {};
  if (security?.tls) {
    const { ca, cert, key, passphrase, servername } = security.tls;
    options.tls = { ca, cert, key, passphrase, servername, rejectUnauthorized: true };
  }
  const sasl = security?.sasl;
  if (sasl?.mechanism === 'OAUTHBEARER') {
    // A provider: the library asks at every authentication, so a renewed token is picked up.
    options.sasl = { mechanism: 'OAUTHBEARER', token: () => sasl.token(), authBytesValidator: refusedTokenCheck };
  } else if (sasl) {
    const { mechanism, username, password } = sasl;
    options.sasl = { mechanism, username, password };
  }
  return options;
}

function createPlatformaticProducer(base: BaseOptions, options: DriverProducerOptions): DriverProducer {
  // The library compresses zstd with node:zlib, which has it from Node 22.15 on: refuse at
  // start rather than at the first send.
  if (options.compression === 'zstd' && typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync !== 'function') {
    throw new Error(`zstd compression needs Node 22.15 or later (this is ${process.version}); use none, gzip or lz4`);
  }
  // Created on connect(): the constructor is cheap, but a closed producer cannot be reopened.
  let producer: Producer | undefined;
  const make = () =>
    completeMetadataAnswers(
      new Producer({
        ...base,
        // Idempotent (acks=all, one request in flight per connection): the broker drops the
        // producer's own retries by sequence number. Sends must still be serialised by the caller:
        // the sequence of a partition advances only when a send is acknowledged, so two sends in
        // flight at once reuse numbers (OUT_OF_ORDER_SEQUENCE_NUMBER, or a silently dropped
        // duplicate: platformatic/kafka issue #326). The wrapper's send coalescer does that.
        idempotent: true,
        acks: ProduceAcks.ALL,
        // The broker's own wait for the in-sync replicas.
        timeout: options.ackTimeoutMs,
        compression: options.compression,
        // The library does not retry a produce that timed out (its TimeoutError says canRetry:
        // false), so one attempt may wait as long as the caller does: a broker that stalls for
        // 24 s then answers this request, instead of leaving its outcome unknown.
        ...(options.inFlightTimeoutMs === undefined ? {} : { requestTimeout: Math.max(base.requestTimeout ?? 0, options.inFlightTimeoutMs) }),
        // The Java client's partitioner (kafkajs's DefaultPartitioner): the library's default
        // takes murmur2 unsigned and would move keys to other partitions than the other drivers.
        // It reduces the result modulo the partition count itself.
        partitioner: (_message, key) => (key ? murmur2(key) & 0x7fffffff : 0),
      }),
    );
  return {
    async connect() {
      producer ??= make();
      // The idempotent producer id is fetched here, so a broker that is down fails the start.
      await wrapErrors('kafka producer connect', platformaticTraits, () => (producer as Producer).initIdempotentProducer({}));
    },
    async disconnect() {
      const closing = producer;
      producer = undefined;
      await wrapErrors('kafka producer disconnect', platformaticTraits, async () => closing?.close());
    },
    send: (batches) =>
      wrapErrors('kafka send failed', platformaticTraits, async () => {
        producer ??= make();
        const messages: MessageToProduce[] = [];
        for (const b of batches) for (const m of b.messages) messages.push(toProduce(b.topic, m));
        await producer.send({ messages });
      }),
  };
}

/** Header names are a handful of constants of our own code: encoded once each, not per message. */
const headerNames = new Map<string, Buffer>();
const MAX_CACHED_HEADER_NAMES = 64;

function headerName(name: string): Buffer {
  let bytes = headerNames.get(name);
  if (!bytes) {
    bytes = Buffer.from(name);
    if (headerNames.size < MAX_CACHED_HEADER_NAMES) headerNames.set(name, bytes);
  }
  return bytes;
}

function toProduce(topic: string, m: DriverMessage): MessageToProduce {
  const headers = new Map<Buffer, Buffer>();
  for (const [k, v] of Object.entries(m.headers ?? {})) headers.set(headerName(k), Buffer.from(v));
  return {
    topic,
    key: m.key === null ? undefined : Buffer.isBuffer(m.key) ? m.key : Buffer.from(m.key),
    // A null value is a tombstone: the library writes it as a null record value.
    value: (m.value === null ? null : Buffer.isBuffer(m.value) ? m.value : Buffer.from(m.value)) as Buffer,
    headers,
    ...(m.partition === undefined ? {} : { partition: m.partition }),
  };
}

const REBALANCE = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID']);

interface PlatformaticErrorLike {
  code?: string;
  apiId?: string;
  canRetry?: boolean;
  needsRejoin?: boolean;
  cause?: unknown;
  errors?: unknown[];
  /** A failed send: what the leaders that did answer acknowledged (`Producer.send`, 1.35). */
  produced?: { offsets?: unknown[] };
}

/** Reads @platformatic/kafka errors: `canRetry`, network/timeout codes and group errors, in nested and aggregated errors. */
export function platformaticTraits(err: unknown): ErrorTraits {
  const traits: ErrorTraits = { retryable: true, unavailable: false, rebalance: false };
  const seen = new Set<unknown>();
  const visit = (e: unknown, depth: number) => {
    if (!e || typeof e !== 'object' || seen.has(e) || depth > 10) return;
    seen.add(e);
    const x = e as PlatformaticErrorLike;
    if (x.canRetry === false) traits.retryable = false;
    if (x.code === 'PLT_KFK_NETWORK' || x.code === 'PLT_KFK_TIMEOUT') traits.unavailable = true;
    if (x.needsRejoin === true || (x.apiId !== undefined && REBALANCE.has(x.apiId))) traits.rebalance = true;
    if (x.apiId === 'UNKNOWN_TOPIC_OR_PARTITION' || x.apiId === 'UNKNOWN_TOPIC_ID') traits.unknownTopic = true;
    if (x.code === 'PLT_KFK_AUTHENTICATION' || x.apiId === 'SASL_AUTHENTICATION_FAILED') traits.authentication = true;
    if (x.apiId?.endsWith('_AUTHORIZATION_FAILED')) traits.authorization ??= x.apiId;
    if (x.apiId !== undefined && PRODUCER_STATE_ERRORS.has(x.apiId)) traits.producerState ??= x.apiId;
    // A send goes to every partition leader at once and its error lists only the leaders that
    // failed; `produced.offsets` names the partitions the others wrote.
    if (Array.isArray(x.produced?.offsets) && x.produced.offsets.length > 0) traits.mayBeWritten = true;
    visit(x.cause, depth + 1);
    for (const inner of x.errors ?? []) visit(inner, depth + 1);
  };
  visit(err, 0);
  const tls = findTlsFailure(err);
  if (tls) traits.tlsCode = tls;
  // Not a library error at all (a bug, a refused argument): not worth retrying.
  if (!(err && typeof err === 'object' && typeof (err as PlatformaticErrorLike).code === 'string')) traits.retryable = false;
  return traits;
}

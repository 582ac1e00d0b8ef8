import { CompressionTypes, type ICustomPartitioner, Kafka, type KafkaConfig, logLevel as KafkaLogLevel, type LogEntry } from 'kafkajs';
import { brokerList } from '../../config.js';
import type { Logger } from '../../logger.js';
import { consumerDefaults, type DriverProducer, type DriverProducerOptions, type KafkaClient, type KafkaClientOptions } from '../driver.js';
import { connectionRefused, type ErrorTraits, findTlsFailure, PRODUCER_STATE_ERRORS, wrapErrors } from '../errors.js';
import type { KafkaSecurity } from '../security.js';
import { createKafkajsAdmin } from './kafkajs.admin.js';
import { createKafkajsConsumer } from './kafkajs.consumer.js';
import { createPartitionChooser } from './partitioner.js';

/** kafkajs 2.2.4: pure JavaScript, the project's first client (unmaintained since 2023). */
export function createKafkajsClient(options: KafkaClientOptions): KafkaClient {
  const log = options.logger.child({ component: 'kafkajs' });
  const kafka = new Kafka({
    clientId: options.clientId,
    brokers: brokerList(options.brokers),
    connectionTimeout: options.connectionTimeoutMs ?? 3_000,
    requestTimeout: options.requestTimeoutMs ?? 10_000,
    retry: { initialRetryTime: 100, maxRetryTime: 2_000, retries: 5 },
    logLevel: KafkaLogLevel.INFO,
    logCreator: () => (entry: LogEntry) => forwardLog(log, entry),
    ...kafkajsSecurity(options.security),
  });
  return {
    driver: 'kafkajs',
    clientId: options.clientId,
    consumerDefaults: consumerDefaults(options),
    producer: (producerOptions) => createKafkajsProducer(kafka, producerOptions),
    consumer: (consumerOptions) => createKafkajsConsumer(kafka, consumerOptions),
    admin: () => createKafkajsAdmin(kafka),
  };
}

/** TLS and SASL in kafkajs's options (mechanism names are lower case there). */
export function kafkajsSecurity(security: KafkaSecurity | undefined): Pick<KafkaConfig, 'ssl' | 'sasl'> {
  const options: Pick<KafkaConfig, 'ssl' | 'sasl'> = {};
  if (security?.tls) {
    const { ca, cert, key, passphrase, servername } = security.tls;
    options.ssl = { ca, cert, key, passphrase, servername, rejectUnauthorized: true };
  }
  const sasl = security?.sasl;
  if (sasl?.mechanism === 'OAUTHBEARER') {
    // Called at every authentication, so a renewed token is picked up.
    options.sasl = { mechanism: 'oauthbearer', oauthBearerProvider: async () => ({ value: sasl.token() }) };
  } else if (sasl) {
    const { username, password, mechanism } = sasl;
    options.sasl =
      mechanism === 'PLAIN'
        ? { mechanism: 'plain', username, password }
        : mechanism === 'SCRAM-SHA-256'
          ? { mechanism: 'scram-sha-256', username, password }
          : { mechanism: 'scram-sha-512', username, password };
  }
  return options;
}

function createKafkajsProducer(kafka: Kafka, options: DriverProducerOptions): DriverProducer {
  // kafkajs ships codecs for none and gzip only; lz4, snappy and zstd need native add-ons.
  if (options.compression === 'lz4' || options.compression === 'zstd') {
    throw new Error(`kafkajs has no built-in ${options.compression} codec (it needs a native add-on); use none or gzip`);
  }
  const choose = createPartitionChooser();
  const partitioner: ICustomPartitioner =
    () =>
    ({ topic, partitionMetadata, message }) =>
      choose(topic, message, leadersOf(partitionMetadata));
  // Idempotent: broker-side dedupe of the producer's own retries. kafkajs orders sequence
  // numbers correctly only with one request in flight per connection, hence the 1.
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: partitioner,
    // Bounded on purpose (kafkajs warns that this weakens its idempotence): an unbounded retry
    // would hold HTTP requests while Kafka is down. With a 10 s request timeout, four attempts
    // outlast a stalled broker of ~30 s; a retry reuses the sequence numbers, so a request the
    // stalled broker did receive is not written twice.
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
  });
  const compression = options.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
  return {
    connect: () => wrapErrors('kafka producer connect', kafkajsTraits, () => producer.connect()),
    disconnect: () => wrapErrors('kafka producer disconnect', kafkajsTraits, () => producer.disconnect()),
    send: (batches) =>
      wrapErrors('kafka send failed', kafkajsSendTraits, async () => {
        await producer.sendBatch({
          topicMessages: batches.map((b) => ({
            topic: b.topic,
            messages: b.messages.map((m) => ({ key: m.key, value: m.value, headers: m.headers, partition: m.partition })),
          })),
          acks: -1,
          timeout: options.ackTimeoutMs,
          compression,
        });
      }),
  };
}

/**
 * A failed sendBatch: kafkajs sends to every partition leader at once, keeps the answers of the
 * leaders that wrote, and reports only the last error of one that did not. A refused connection
 * then says nothing about the others (in a cluster with one broker down, they wrote their part),
 * nor about an earlier attempt that reached the broker before it died: never "nothing written".
 */
export function kafkajsSendTraits(err: unknown): ErrorTraits {
  return { ...kafkajsTraits(err), ...(connectionRefused(err) ? { mayBeWritten: true } : {}) };
}

/** Leader per partition id (kafkajs lists partitions in any order). */
function leadersOf(partitionMetadata: readonly { partitionId: number; leader: number }[]): number[] {
  const leaders = new Array<number>(partitionMetadata.length).fill(-1);
  for (const p of partitionMetadata) leaders[p.partitionId] = p.leader;
  return leaders;
}

const UNAVAILABLE = new Set(['KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSRequestTimeoutError', 'KafkaJSBrokerNotFound']);
const REBALANCE = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID']);

/** Reads kafkajs errors: `retriable`, the error class names and protocol error types along the cause chain and in aggregates. */
export function kafkajsTraits(err: unknown): ErrorTraits {
  const traits: ErrorTraits = { retryable: false, unavailable: false, rebalance: false };
  const seen = new Set<unknown>();
  const visit = (x: unknown, depth: number) => {
    if (!x || typeof x !== 'object' || seen.has(x) || depth > 10) return;
    seen.add(x);
    const e = x as { name?: string; type?: string; retriable?: boolean; cause?: unknown; errors?: unknown[] };
    if (e.retriable === true) traits.retryable = true;
    if (e.name !== undefined && UNAVAILABLE.has(e.name)) traits.unavailable = true;
    if (e.type !== undefined && REBALANCE.has(e.type)) traits.rebalance = true;
    if (e.type === 'UNKNOWN_TOPIC_OR_PARTITION') traits.unknownTopic = true;
    if (e.name === 'KafkaJSSASLAuthenticationError' || e.type === 'SASL_AUTHENTICATION_FAILED') traits.authentication = true;
    if (e.type?.endsWith('_AUTHORIZATION_FAILED')) traits.authorization ??= e.type;
    if (e.type !== undefined && PRODUCER_STATE_ERRORS.has(e.type)) traits.producerState ??= e.type;
    // KafkaJSNumberOfRetriesExceeded: the retries ran out on a retriable cause.
    if (e.name === 'KafkaJSNumberOfRetriesExceeded') traits.retryable = true;
    visit(e.cause, depth + 1);
    // KafkaJSAggregateError: one error per broker of a sendBatch.
    for (const inner of Array.isArray(e.errors) ? e.errors : []) visit(inner, depth + 1);
  };
  visit(err, 0);
  const tls = findTlsFailure(err);
  if (tls) traits.tlsCode = tls;
  return traits;
}

function forwardLog(log: Logger, { level, log: payload }: LogEntry): void {
  const { message, timestamp: _ts, logger: _logger, ...fields } = payload;
  switch (level) {
    case KafkaLogLevel.ERROR:
      log.error(fields, message);
      break;
    case KafkaLogLevel.WARN:
      log.warn(fields, message);
      break;
    case KafkaLogLevel.INFO:
      // kafkajs is chatty at info (every join/sync); keep it at debug in our logs.
      log.debug(fields, message);
      break;
    default:
      log.trace(fields, message);
  }
}

import { Kafka, logLevel as KafkaLogLevel, type LogEntry } from 'kafkajs';
import { brokerList } from '../config.js';
import type { Logger } from '../logger.js';

/**
 * The only module (with its siblings in this folder) that imports kafkajs. The rest of the code
 * sees `KafkaClient`, `Producer` and `BatchConsumer`, so a measured switch to another client
 * (@platformatic/kafka, @confluentinc/kafka-javascript) stays a change inside this folder.
 */
export interface KafkaClientOptions {
  brokers: string;
  clientId: string;
  logger: Logger;
  /** Upper bound for connecting and for each request; keeps failures fast when Kafka is down. */
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
}

export type KafkaClient = Kafka;

export function createKafkaClient(options: KafkaClientOptions): KafkaClient {
  const log = options.logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: options.clientId,
    brokers: brokerList(options.brokers),
    connectionTimeout: options.connectionTimeoutMs ?? 3_000,
    requestTimeout: options.requestTimeoutMs ?? 10_000,
    retry: { initialRetryTime: 100, maxRetryTime: 2_000, retries: 5 },
    logLevel: KafkaLogLevel.INFO,
    logCreator: () => (entry: LogEntry) => forwardLog(log, entry),
  });
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

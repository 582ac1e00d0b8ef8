import type { Logger } from '../logger.js';
import { DEFAULT_KAFKA_DRIVER } from './defaults.js';
import { createKafkajsClient } from './drivers/kafkajs.client.js';
import { createPlatformaticClient } from './drivers/platformatic.client.js';
import type { KafkaAdmin, KafkaClient, KafkaClientOptions, KafkaDriverName } from './driver.js';
import { verifyKafkaAccess } from './security-check.js';
import { type KafkaSecuritySettings, resolveKafkaSecurity } from './security.js';

/**
 * The Kafka client the services use. This folder is the only place that imports a Kafka
 * library (an eslint rule keeps it so): the rest of the code sees `KafkaClient`, `Producer`,
 * `BatchConsumer`, `KafkaAdmin` and `KafkaError`, and `KAFKA_DRIVER` picks the library.
 */
export { COMPRESSIONS, KAFKA_DRIVERS } from './driver.js';
export type { Compression, KafkaAdmin, KafkaClient, KafkaClientOptions, KafkaDriverName, NewTopic, PartitionRange, TopicPartitionOffset } from './driver.js';

export { DEFAULT_KAFKA_DRIVER } from './defaults.js';

export function createKafkaClient(options: KafkaClientOptions): KafkaClient {
  const driver: KafkaDriverName = options.driver ?? DEFAULT_KAFKA_DRIVER;
  switch (driver) {
    case 'kafkajs':
      return createKafkajsClient(options);
    case 'platformatic':
      return createPlatformaticClient(options);
    default:
      throw new Error(`unknown Kafka driver ${String(driver)}`);
  }
}

/** The settings of `KafkaConfig` (config.ts) a client is made of (TLS and SASL: `KafkaSecurityConfig`). */
export interface KafkaClientConfig extends KafkaSecuritySettings {
  KAFKA_BROKERS: string;
  KAFKA_CLIENT_ID: string;
  KAFKA_DRIVER: KafkaDriverName;
  KAFKA_SESSION_TIMEOUT_MS: number;
  KAFKA_CONSUMER_DEAD_AFTER_MS: number;
}

/**
 * The client of a service or tool; `role` names it to the brokers (`<KAFKA_CLIENT_ID>-<role>`).
 * Reads the TLS/SASL files; a wrong setting throws `invalid_config` naming it.
 */
export function createKafkaClientFromConfig(config: KafkaClientConfig, role: string, logger: Logger): KafkaClient {
  return createKafkaClient(clientOptions(config, role, logger));
}

function clientOptions(config: KafkaClientConfig, role: string, logger: Logger): KafkaClientOptions {
  return {
    brokers: config.KAFKA_BROKERS,
    clientId: `${config.KAFKA_CLIENT_ID}-${role}`,
    driver: config.KAFKA_DRIVER,
    sessionTimeoutMs: config.KAFKA_SESSION_TIMEOUT_MS,
    consumerDeadAfterMs: config.KAFKA_CONSUMER_DEAD_AFTER_MS,
    security: resolveKafkaSecurity(config),
    logger,
  };
}

/**
 * `createKafkaClientFromConfig`, then one metadata round trip: credentials the brokers refuse
 * or a certificate we do not trust end the start with an error naming the setting
 * (`kafka_auth_failed`), instead of clients that retry forever. What services and tools call.
 */
export async function openKafkaClientFromConfig(config: KafkaClientConfig, role: string, logger: Logger): Promise<KafkaClient> {
  const options = clientOptions(config, role, logger);
  const kafka = createKafkaClient(options);
  try {
    await verifyKafkaAccess(kafka, { brokers: options.brokers, security: options.security, logger });
  } catch (err) {
    // One structured line that says what to fix, before the start fails.
    logger.fatal({ code: (err as { code?: unknown }).code }, (err as Error).message);
    throw err;
  }
  return kafka;
}

/** Runs `work` with a connected admin and always disconnects it. */
export async function withAdmin<T>(kafka: KafkaClient, work: (admin: KafkaAdmin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

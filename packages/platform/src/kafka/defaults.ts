import type { KafkaDriverName } from './driver.js';

/** The library the services use unless `KAFKA_DRIVER` says otherwise (docs/kafka.md: why). */
export const DEFAULT_KAFKA_DRIVER: KafkaDriverName = 'platformatic';

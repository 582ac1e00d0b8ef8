import { DEFAULT_KAFKA_DRIVER, KAFKA_DRIVERS } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { chaosKafkaDrivers } from './env.js';

describe('chaosKafkaDrivers (which drivers the chaos scenarios of every driver run with)', () => {
  it('is the default driver unless asked, every driver for "all", or the list given', () => {
    expect(chaosKafkaDrivers({})).toEqual([DEFAULT_KAFKA_DRIVER]);
    expect(chaosKafkaDrivers({ CHAOS_KAFKA_DRIVERS: ' ' })).toEqual([DEFAULT_KAFKA_DRIVER]);
    expect(chaosKafkaDrivers({ CHAOS_KAFKA_DRIVERS: 'all' })).toEqual([...KAFKA_DRIVERS]);
    expect(chaosKafkaDrivers({ CHAOS_KAFKA_DRIVERS: 'kafkajs' })).toEqual(['kafkajs']);
    expect(chaosKafkaDrivers({ CHAOS_KAFKA_DRIVERS: 'kafkajs, platformatic' })).toEqual(['kafkajs', 'platformatic']);
  });

  it('refuses a driver that does not exist, naming it (a renamed driver fails npm run test:scale loudly)', () => {
    expect(() => chaosKafkaDrivers({ CHAOS_KAFKA_DRIVERS: 'kafkajs,rdkafka' })).toThrow(/unknown driver rdkafka/);
  });
});

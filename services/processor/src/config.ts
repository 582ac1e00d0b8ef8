import { ClickHouseConfig, CommonConfig, KafkaConfig, loadConfig } from '@ingest/shared';
import { type Static, Type } from '@sinclair/typebox';

export const ProcessorConfigSchema = Type.Object({
  ...CommonConfig,
  ...KafkaConfig,
  ...ClickHouseConfig,
  PROCESSOR_OPS_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3101 }),
  PROCESSOR_OPS_HOST: Type.String({ default: '127.0.0.1' }),
  PROCESSOR_STORAGE_GROUP: Type.String({ minLength: 1, default: 'processor-storage' }),
  PROCESSOR_PARTITIONS_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
});

export type ProcessorConfig = Static<typeof ProcessorConfigSchema>;

export function loadProcessorConfig(env?: Record<string, string | undefined>): ProcessorConfig {
  return loadConfig(ProcessorConfigSchema, env);
}

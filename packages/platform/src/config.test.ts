import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { brokerList, ClickHouseConfig, CommonConfig, KafkaConfig, loadConfig } from './config.js';

const Schema = Type.Object({ ...CommonConfig, ...KafkaConfig, ...ClickHouseConfig, PORT: Type.Integer({ minimum: 1, default: 3000 }) });

describe('loadConfig', () => {
  it('applies defaults and coerces numbers', () => {
    const config = loadConfig(Schema, { PORT: '8080' });
    expect(config.PORT).toBe(8080);
    expect(config.KAFKA_BROKERS).toBe('127.0.0.1:9092');
    expect(config.LOG_LEVEL).toBe('info');
    expect(config.CLICKHOUSE_DATABASE).toBe('ingest');
  });

  it('names the variable that is wrong', () => {
    expect(() => loadConfig(Schema, { PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig(Schema, { CLICKHOUSE_DATABASE: 'bad-name;' })).toThrow(/CLICKHOUSE_DATABASE/);
    expect(() => loadConfig(Schema, { LOG_LEVEL: 'loud' })).toThrow(/LOG_LEVEL/);
  });

  it('ignores variables outside the schema', () => {
    const config = loadConfig(Schema, { UNRELATED: 'x' }) as Record<string, unknown>;
    expect(config.UNRELATED).toBeUndefined();
  });
});

describe('brokerList', () => {
  it('splits and trims', () => {
    expect(brokerList(' a:1, b:2 ,,')).toEqual(['a:1', 'b:2']);
  });
});

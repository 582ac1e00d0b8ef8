import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { integrationEnv } from '@ingest/testkit';
import { integrationVariables, KAFKA_IMAGE, kafkaContainerSpec, testReaderStatements } from './containers.js';

describe('test containers', () => {
  it('runs the Kafka version of the local stack and of docker-compose.yml', () => {
    const pom = readFileSync(new URL('../../deploy/kafka/pom.xml', import.meta.url), 'utf8');
    const stackVersion = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1];
    expect(stackVersion).toBeDefined();
    expect(KAFKA_IMAGE).toBe(`apache/kafka:${stackVersion}`);
    const compose = readFileSync(new URL('../../docker-compose.yml', import.meta.url), 'utf8');
    expect(compose).toContain(`image: apache/kafka:${stackVersion}`);
  });

  it('advertises the published host port, so clients outside the container reach the broker', () => {
    const spec = kafkaContainerSpec(41234);
    expect(spec.ports).toEqual([{ container: 9092, host: 41234 }]);
    expect(spec.env.KAFKA_ADVERTISED_LISTENERS).toBe('PLAINTEXT://127.0.0.1:41234');
    expect(spec.env.KAFKA_PROCESS_ROLES).toBe('broker,controller');
    expect(spec.env.KAFKA_AUTO_CREATE_TOPICS_ENABLE).toBe('false');
  });

  it("passes the ClickHouse container's credentials to the tests' clients", () => {
    const vars = integrationVariables({
      kafkaHostPort: 41234,
      clickhouseUrl: 'http://localhost:32768',
      clickhouseUser: 'test',
      clickhousePassword: 'test',
      redisUrl: 'redis://localhost:32769',
    });
    expect(integrationEnv(vars)).toEqual({
      kafkaBrokers: '127.0.0.1:41234',
      kafkaDriver: 'platformatic',
      clickhouseUrl: 'http://localhost:32768',
      clickhouseUser: 'test',
      clickhousePassword: 'test',
      clickhouseReader: { user: 'ingest_reader', password: 'ingest-reader-local' },
      redisUrl: 'redis://localhost:32769',
    });
    expect(testReaderStatements()[0]).toMatch(/^CREATE USER IF NOT EXISTS ingest_reader .* SETTINGS readonly = 1, max_execution_time = 10$/);
  });
});

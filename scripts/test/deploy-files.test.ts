/**
 * The deployment files stay consistent with the code: every workspace is built by the
 * Dockerfile, compose uses only configuration variables the services define, and the compose
 * host ports are the local stack's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClickHouseConfig, CommonConfig, KafkaConfig, RedisConfig } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { workspaceDirs } from '../lib/workspaces.js';
import { ConsoleConfigSchema } from '@ingest/console/config';
import { GatewayConfigSchema } from '@ingest/gateway/config';
import { ProcessorConfigSchema } from '@ingest/processor/config';
import { CrmSinkConfigSchema } from '@ingest/crm-sink/config';

const root = new URL('../../', import.meta.url).pathname;
const read = (path: string) => readFileSync(join(root, path), 'utf8');

interface ComposeService {
  environment?: Record<string, unknown>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: unknown;
}
const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, ComposeService> };

describe('Dockerfile', () => {
  it('copies the manifest of every workspace before npm ci', () => {
    const dockerfile = read('Dockerfile');
    const workspaces = workspaceDirs();
    expect(workspaces.length).toBeGreaterThanOrEqual(4);
    for (const w of workspaces) expect(dockerfile).toContain(`COPY ${w}/package.json ${w}/`);
  });
});

describe('docker-compose.yml', () => {
  const knownVariables = new Set([
    ...Object.keys({ ...CommonConfig, ...KafkaConfig, ...ClickHouseConfig, ...RedisConfig }),
    ...Object.keys(ProcessorConfigSchema.properties),
    ...Object.keys(GatewayConfigSchema.properties),
    ...Object.keys(ConsoleConfigSchema.properties),
    ...Object.keys(CrmSinkConfigSchema.properties),
    // tools/cli/src/setup.ts: the gateway's read-only ClickHouse user.
    'CLICKHOUSE_READER_USER',
    'CLICKHOUSE_READER_PASSWORD',
    'SERVICE',
    // tools/cli/src/setup.ts: the Redis users it creates.
    'REDIS_ADMIN_URL',
    'REDIS_ROLE_PASSWORDS',
  ]);

  it('passes only variables that some service configuration defines', () => {
    for (const name of ['setup', 'gateway', 'processor', 'crm-sink']) {
      const env = Object.keys(compose.services[name]?.environment ?? {});
      expect(env.length).toBeGreaterThan(0);
      expect(env.filter((v) => !knownVariables.has(v))).toEqual([]);
    }
  });

  it('carries the secure settings: Redis password, the read-only ClickHouse user, crm-sink alone with the private key', () => {
    type Secure = ComposeService & { secrets?: string[]; volumes?: string[]; command?: string[] };
    const services = compose.services as Record<string, Secure>;
    // One Redis user per service (redis-acl.ts), each with its own password; setup creates them as the default user.
    for (const name of ['gateway', 'console', 'processor', 'crm-sink']) {
      const variable = `REDIS_${name.toUpperCase().replace('-', '_')}_PASSWORD`;
      expect(String(services[name]?.environment?.REDIS_URL), name).toBe(`redis://${name}:\${${variable}:?set ${variable}}@redis:6379`);
      expect(String(services.setup?.environment?.REDIS_ROLE_PASSWORDS)).toContain(`${name}=\${${variable}:?`);
    }
    expect(String(services.setup?.environment?.REDIS_ADMIN_URL)).toMatch(/^redis:\/\/:\$\{REDIS_PASSWORD:\?/);
    expect(services.redis?.command?.join(' ')).toContain('--requirepass "$$REDIS_PASSWORD"');
    for (const name of ['gateway', 'console'])
      expect(services[name]?.environment?.CLICKHOUSE_USER, name).toBe(services.setup?.environment?.CLICKHOUSE_READER_USER);
    const holders = Object.entries(services).filter(([, s]) => (s.secrets ?? []).includes('crm_private_key'));
    expect(holders.map(([n]) => n)).toEqual(['crm-sink']);
    // The console seals CRM credentials with the public key; the gateway stores none and gets no key.
    expect(services.console?.volumes?.filter((v) => v.includes('crm'))).toEqual([
      '${CRM_KEYS_DIR:-./.local/crm-keys}/local.pub.pem:/etc/ingest/crm-public-key.pem:ro',
    ]);
    expect(services.console?.environment?.CRM_CREDENTIALS_PUBLIC_KEY_FILE).toBe('/etc/ingest/crm-public-key.pem');
    expect(services.console?.environment).not.toHaveProperty('CRM_CREDENTIALS_PRIVATE_KEY_FILES');
    expect(services.gateway?.volumes ?? []).toEqual([]);
    expect(Object.keys(services.gateway?.environment ?? {}).filter((v) => v.startsWith('CRM_CREDENTIALS_') || v.startsWith('ADMIN_'))).toEqual([]);
  });

  it('binds the local stack ports on loopback only', () => {
    const ports = Object.values(compose.services).flatMap((s) => s.ports ?? []);
    expect(ports.every((p) => p.startsWith('127.0.0.1:'))).toBe(true);
    expect(ports).toEqual(expect.arrayContaining(['127.0.0.1:9092:9092', '127.0.0.1:8123:8123', '127.0.0.1:6379:6379']));
  });

  it('starts services only after their dependencies are healthy', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      for (const [dep, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect(['service_healthy', 'service_completed_successfully'], `${name} -> ${dep}`).toContain(condition);
        if (condition === 'service_healthy') expect(compose.services[dep]?.healthcheck, `${dep} needs a healthcheck`).toBeDefined();
      }
    }
  });
});

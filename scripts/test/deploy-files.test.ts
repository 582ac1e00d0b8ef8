/**
 * The deployment files stay consistent with the code: every workspace is built by the
 * Dockerfile, compose uses only configuration variables the services define, and the compose
 * host ports are the local stack's.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ClickHouseConfig, CommonConfig, KafkaConfig, type KafkaRole, parseAclPrincipals, RedisConfig } from '@ingest/platform';
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
  volumes?: string[];
  entrypoint?: string[];
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
    // tools/cli/src/setup.ts: the gateway's read-only ClickHouse user, the services' Kafka ACLs.
    'CLICKHOUSE_READER_USER',
    'CLICKHOUSE_READER_PASSWORD',
    // tools/cli/src/setup.ts: retention (docs/clickhouse-retention.md).
    'EVENTS_RETENTION_DAYS',
    'ROLLUPS_RETENTION_DAYS',
    // tools/cli/src/setup.ts: the migrations ON CLUSTER (docs/scale.md).
    'CLICKHOUSE_CLUSTER',
    'KAFKA_ACL_PRINCIPALS',
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
    // The users in an ACL file on the volume (a restart keeps setup's users), the default user's password from the environment.
    const redisCommand = services.redis?.command?.join(' ') ?? '';
    expect(redisCommand).toContain('redis-server --aclfile /data/users.acl');
    expect(redisCommand).toContain('printf %s "$$REDIS_PASSWORD" | sha256sum');
    expect(redisCommand).not.toContain('--requirepass');
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
    // The gateway mounts only the Kafka CA.
    expect(services.gateway?.volumes ?? []).toEqual(['kafka-tls:/etc/ingest/kafka-tls:ro']);
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

  /** deploy/kafka/compose-server.properties.template as key=value pairs. */
  const brokerConfig = new Map(
    read('deploy/kafka/compose-server.properties.template')
      .split('\n')
      .filter((line) => line.includes('=') && !line.startsWith('#'))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const),
  );

  it('runs Kafka with TLS and SASL only, an authorizer denying what no ACL allows, and no plaintext listener', () => {
    const kafka = compose.services.kafka as ComposeService;
    // The broker's settings are the template compose-broker.sh renders, not the image's KAFKA_* variables.
    expect(kafka.entrypoint).toEqual(['sh', '/etc/kafka/compose/compose-broker.sh']);
    expect(kafka.volumes).toEqual(
      expect.arrayContaining([
        './deploy/kafka/compose-broker.sh:/etc/kafka/compose/compose-broker.sh:ro',
        './deploy/kafka/compose-server.properties.template:/etc/kafka/compose/compose-server.properties.template:ro',
        'kafka-tls:/etc/kafka/tls:ro',
      ]),
    );
    expect(Object.keys(kafka.environment ?? {}).filter((v) => /LISTENER|SECURITY_PROTOCOL|AUTHORIZER/.test(v))).toEqual([]);
    const protocols = new Map((brokerConfig.get('listener.security.protocol.map') ?? '').split(',').map((p) => p.split(':') as [string, string]));
    const listeners = (brokerConfig.get('listeners') ?? '').split(',').map((l) => /^(\w+):\/\/([^:]+):(\d+)$/.exec(l)?.slice(1) ?? [l]);
    expect(listeners.length).toBeGreaterThanOrEqual(2);
    for (const [name, host] of listeners) {
      // The controller's listener answers inside the container only; every client listener is SASL_SSL.
      if (name === 'CONTROLLER') expect(host).toBe('localhost');
      else expect(protocols.get(name ?? ''), `listener ${name}`).toBe('SASL_SSL');
    }
    // What the host reaches (127.0.0.1:9092) is a SASL_SSL listener.
    const published = (kafka.ports ?? []).map((p) => p.split(':')[2]);
    expect(published).toEqual(['9092']);
    expect(listeners.find(([, , port]) => port === '9092')?.[0]).toBe('EXTERNAL');
    expect(brokerConfig.get('ssl.keystore.location')).toBe('/etc/kafka/tls/broker.keystore.pem');
    // The kafka-tls one-shot makes that keystore, for every host the broker advertises.
    expect(kafka.depends_on?.['kafka-tls']).toEqual({ condition: 'service_completed_successfully' });
    expect((compose.services['kafka-tls'] as ComposeService | undefined)?.volumes).toEqual(['kafka-tls:/tls']);
    expect(read('deploy/kafka/tls.Dockerfile')).toContain('COPY deploy/kafka/compose-tls.sh ');
    const san = /subjectAltName=([^\\]+)/.exec(read('deploy/kafka/compose-tls.sh'))?.[1] ?? '';
    for (const advertised of (brokerConfig.get('advertised.listeners') ?? '').split(',')) {
      const host = /:\/\/([^:]+):/.exec(advertised)?.[1] ?? advertised;
      expect(san.split(','), advertised).toContain(/^\d/.test(host) ? `IP:${host}` : `DNS:${host}`);
    }
    expect(brokerConfig.get('authorizer.class.name')).toBe('org.apache.kafka.metadata.authorizer.StandardAuthorizer');
    expect(brokerConfig.get('allow.everyone.if.no.acl.found')).toBe('false');
    expect(brokerConfig.get('super.users')).toBe('User:admin;User:controller');
    // The same as the local secure broker's.
    const local = read('deploy/kafka/server-secure.properties.template');
    for (const key of ['authorizer.class.name', 'allow.everyone.if.no.acl.found', 'super.users', 'ssl.keystore.type', 'ssl.client.auth']) {
      expect(local, key).toContain(`${key}=${brokerConfig.get(key)}`);
    }
  });

  it('connects every service over TLS with its own principal, and its setup applies the ACLs of the local secure broker', () => {
    const env = (name: string) => compose.services[name]?.environment ?? {};
    const principals = parseAclPrincipals(String(env('setup').KAFKA_ACL_PRINCIPALS));
    const stackPrincipals = /KAFKA_ACL_PRINCIPALS=([^\\\n']+)/.exec(read('scripts/stack-kafka-secure.sh'))?.[1];
    expect(principals).toEqual(parseAclPrincipals(stackPrincipals ?? ''));
    expect(env('setup').KAFKA_SASL_USERNAME).toBe('admin');
    const rolesOf = (user: unknown) =>
      principals
        .filter((p) => p.principal === `User:${String(user)}`)
        .map((p) => p.role)
        .sort();
    const expected: Record<string, KafkaRole[]> = { gateway: ['ingest'], console: ['console', 'ingest'], processor: ['processor'], 'crm-sink': ['crm-sink'] };
    const brokerUsers = /^users="([^"]+)"/m.exec(read('deploy/kafka/compose-broker.sh'))?.[1]?.split(' ') ?? [];
    const mechanisms = (brokerConfig.get('listener.name.internal.sasl.enabled.mechanisms') ?? '').split(',');
    for (const name of ['setup', ...Object.keys(expected)]) {
      const e = env(name);
      expect({ name, ssl: e.KAFKA_SSL, ca: e.KAFKA_SSL_CA, brokers: e.KAFKA_BROKERS }).toEqual({
        name,
        ssl: 'true',
        ca: '/etc/ingest/kafka-tls/ca.pem',
        brokers: 'kafka:19092',
      });
      expect(compose.services[name]?.volumes, name).toContain('kafka-tls:/etc/ingest/kafka-tls:ro');
      expect(mechanisms, name).toContain(e.KAFKA_SASL_MECHANISM);
      expect(brokerUsers, name).toContain(e.KAFKA_SASL_USERNAME);
      // A password of its own, required: compose refuses to start without it.
      expect(String(e.KAFKA_SASL_PASSWORD), name).toMatch(
        new RegExp(`^\\$\\{KAFKA_${String(e.KAFKA_SASL_USERNAME).toUpperCase().replace('-', '_')}_PASSWORD:\\?`),
      );
    }
    for (const [name, roles] of Object.entries(expected)) expect(rolesOf(env(name).KAFKA_SASL_USERNAME), name).toEqual(roles);
    // The broker knows every user's password, each required.
    for (const user of brokerUsers) {
      const variable = `KAFKA_${user.toUpperCase().replace('-', '_')}_PASSWORD`;
      expect(String(env('kafka')[`KAFKA_PASSWORD_${user.toUpperCase().replace('-', '_')}`]), user).toMatch(new RegExp(`^\\$\\{${variable}:\\?`));
    }
  });

  it('ships no default password: secrets are required, Grafana has no anonymous access', () => {
    const text = read('docker-compose.yml');
    // An empty default (ADMIN_TOKEN_PREVIOUS: none) is no password.
    const defaulted = [...text.matchAll(/\$\{(\w+):-[^}]/g)].map((m) => m[1] ?? '').filter((v) => /PASSWORD|TOKEN|SECRET|HMAC|_KEY$/.test(v));
    expect(defaulted).toEqual([]);
    expect(String(compose.services.clickhouse?.environment?.CLICKHOUSE_PASSWORD)).toMatch(/^\$\{CLICKHOUSE_PASSWORD:\?/);
    const grafana = compose.services.grafana?.environment ?? {};
    expect(grafana.GF_AUTH_ANONYMOUS_ENABLED).toBe('false');
    expect(String(grafana.GF_SECURITY_ADMIN_PASSWORD)).toMatch(/^\$\{GRAFANA_ADMIN_PASSWORD:\?/);
  });
});

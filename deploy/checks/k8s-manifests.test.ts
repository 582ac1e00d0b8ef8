/**
 * deploy/k8s/: every manifest is valid against the Kubernetes schemas and has no unknown field,
 * the checks reject broken manifests, and the manifests agree with the code (configuration
 * variables, ops ports, probes, secrets, partitions, the Prometheus discovery names).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouseConfig, CommonConfig, KafkaConfig, RedisConfig, REDIS_ROLES, REPO_ROOT, TOPICS } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CrmSinkConfigSchema } from '@ingest/crm-sink/config';
import { ConsoleConfigSchema } from '@ingest/console/config';
import { GatewayConfigSchema } from '@ingest/gateway/config';
import { ProcessorConfigSchema } from '@ingest/processor/config';
import { K8S_DIR, loadManifests, type Manifest, validateManifest } from './k8s-manifests.js';
import { unknownFieldProblems } from './k8s-strict.js';

const { manifests, problems: loadProblems } = loadManifests();
const applied = manifests.filter((m) => !m.file.includes('/templates/'));
const ofKind = (kind: string) => manifests.filter((m) => m.doc.kind === kind);
const named = (kind: string, name: string) => {
  const found = manifests.find((m) => m.doc.kind === kind && m.doc.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in ${K8S_DIR}`);
  return found.doc as Record<string, never>;
};

// The shapes read below (the schema test proves the documents have them).
interface Container {
  name: string;
  image: string;
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name?: string; containerPort: number }[];
  readinessProbe?: { httpGet?: { path: string; port: number | string } };
  livenessProbe?: { httpGet?: { path: string; port: number | string } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
}
interface PodSpec {
  containers: Container[];
  restartPolicy?: string;
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
}
interface Workload {
  metadata: { name: string };
  spec: { replicas?: number; selector?: { matchLabels: Record<string, string> }; template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec } };
}
const workloads = manifests.filter((m) => m.doc.kind === 'Deployment' || m.doc.kind === 'Job').map((m) => m.doc as unknown as Workload);
const deployment = (name: string) => named('Deployment', name) as unknown as Workload;
const config = named('ConfigMap', 'ingest-config') as unknown as { data: Record<string, string> };

describe('schema validation', () => {
  it('finds the manifests: namespace, config, setup job, gateway, console, processor and crm-sink', () => {
    expect(loadProblems).toEqual([]);
    expect(manifests.map((m) => `${m.doc.kind}/${m.doc.metadata?.name}`).sort()).toEqual(
      [
        'ConfigMap/ingest-config',
        'Deployment/console',
        'Deployment/crm-sink',
        'Deployment/gateway',
        'Deployment/processor',
        'HorizontalPodAutoscaler/gateway',
        'Job/ingest-setup',
        'Namespace/ingest',
        'NetworkPolicy/console-egress-crm-sink-internal',
        'NetworkPolicy/console-ingress',
        'NetworkPolicy/crm-sink-egress-internet',
        'NetworkPolicy/crm-sink-internal-from-console',
        'NetworkPolicy/default-deny',
        'NetworkPolicy/egress-infrastructure',
        'NetworkPolicy/gateway-ingress',
        'NetworkPolicy/ops-from-monitoring',
        'ConfigMap/crm-credentials-public-key',
        'Secret/crm-credentials-private-key',
        'PodDisruptionBudget/console',
        'PodDisruptionBudget/crm-sink',
        'PodDisruptionBudget/gateway',
        'PodDisruptionBudget/processor',
        'Secret/ingest-secrets',
        'Service/console',
        'Service/console-metrics',
        'Service/gateway',
        'Service/crm-sink-internal',
        'Service/crm-sink-metrics',
        'Service/gateway-metrics',
        'Service/processor-metrics',
      ].sort(),
    );
  });

  it('every manifest is valid against its Kubernetes schema', () => {
    expect(manifests.flatMap(validateManifest)).toEqual([]);
  });

  it('no manifest has a field its kind does not define', () => {
    expect(unknownFieldProblems(manifests)).toEqual([]);
  }, 30_000);
});

describe('the checks reject broken manifests', () => {
  const gateway = manifests.find((m) => m.doc.kind === 'Deployment' && m.doc.metadata?.name === 'gateway') as Manifest;
  const broken = (change: (doc: Workload & Record<string, unknown>) => void): Manifest => {
    const copy = structuredClone(gateway);
    change(copy.doc as unknown as Workload & Record<string, unknown>);
    return copy;
  };
  const container = (d: Workload) => d.spec.template.spec.containers[0] as Container & Record<string, unknown>;

  it('a wrong type, a missing required field, a malformed quantity', () => {
    expect(validateManifest(broken((d) => Object.assign(d.spec, { replicas: 'two' })))).toEqual([
      expect.stringMatching(/30-gateway.yaml #1 \(Deployment gateway\): .*spec\/replicas must be integer/),
    ]);
    expect(validateManifest(broken((d) => delete (d.spec as Partial<Workload['spec']>).template))).toEqual([
      expect.stringMatching(/spec must have required property template/),
    ]);
    expect(validateManifest(broken((d) => Object.assign(container(d), { resources: { limits: { memory: 'lots' } } })))[0]).toMatch(/limits\/memory/);
    expect(validateManifest(broken((d) => Object.assign(container(d), { ports: [{ name: 'http', containerPort: 'http' }] })))[0]).toMatch(
      /containerPort must be integer/,
    );
  });

  it('a kind without a schema, or a namespaced object without namespace', () => {
    expect(validateManifest({ file: 'x.yaml', index: 0, doc: { apiVersion: 'apps/v1', kind: 'Deploymnet', metadata: { name: 'x', namespace: 'y' } } })).toEqual(
      [expect.stringMatching(/no schema for apiVersion apps\/v1 kind Deploymnet/)],
    );
    expect(validateManifest(broken((d) => delete (d as { metadata: { namespace?: string } }).metadata.namespace))).toEqual([
      expect.stringMatching(/metadata.namespace is missing/),
    ]);
  });

  it('a misspelt or misplaced field, which the schemas alone let through', () => {
    const typo = broken((d) => Object.assign(d.spec, { replica: 3 }));
    expect(validateManifest(typo)).toEqual([]);
    expect(unknownFieldProblems([typo])).toEqual([
      expect.stringMatching(/30-gateway.yaml #1 \(Deployment gateway\) at spec.replica: .*'"replica"' does not exist/),
    ]);
    const misplaced = broken((d) => Object.assign(container(d).resources ?? {}, { readinessProbe: {} }));
    expect(unknownFieldProblems([misplaced])).toEqual([expect.stringMatching(/at spec.template.spec.containers\[\].resources.readinessProbe: /)]);
  }, 30_000);

  it('a file that is not valid YAML', () => {
    const dir = mkdtempSync(join(tmpdir(), 'k8s-'));
    try {
      writeFileSync(join(dir, 'bad.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   namespace: y\n');
      expect(loadManifests('.', dir).problems).toEqual([expect.stringMatching(/^bad.yaml #1: YAML: /)]);
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});

describe('configuration', () => {
  const defined = new Set([
    ...Object.keys({ ...CommonConfig, ...KafkaConfig, ...ClickHouseConfig, ...RedisConfig }),
    ...Object.keys(GatewayConfigSchema.properties),
    ...Object.keys(ConsoleConfigSchema.properties),
    ...Object.keys(ProcessorConfigSchema.properties),
    ...Object.keys(CrmSinkConfigSchema.properties),
    // tools/cli/src/setup.ts defines these in its own schema.
    'CLICKHOUSE_MIGRATIONS_DIR',
    'CLICKHOUSE_CLUSTER',
    'CLICKHOUSE_READER_USER',
    'CLICKHOUSE_READER_PASSWORD',
    'EVENTS_RETENTION_DAYS',
    'ROLLUPS_RETENTION_DAYS',
    'KAFKA_ACL_PRINCIPALS',
    'REDIS_ADMIN_URL',
    'REDIS_ROLE_PASSWORDS',
  ]);
  const secretTemplate = named('Secret', 'ingest-secrets') as unknown as { stringData: Record<string, string> };

  it('the ConfigMap holds only variables some service defines, and no secret', () => {
    expect(Object.keys(config.data).filter((k) => !defined.has(k))).toEqual([]);
    expect(Object.keys(config.data)).not.toContain('ADMIN_TOKEN');
    expect(Object.keys(config.data)).not.toContain('CLICKHOUSE_PASSWORD');
    // Credentials and keys: a password may hide in REDIS_URL, a key in the *_KEYS variables.
    for (const secret of ['CLICKHOUSE_READER_PASSWORD', 'REDIS_URL', 'CRM_CREDENTIALS_PRIVATE_KEYS', 'CRM_CREDENTIALS_PUBLIC_KEY'])
      expect(Object.keys(config.data)).not.toContain(secret);
    expect(Object.values(config.data).join('\n')).not.toMatch(/BEGIN [A-Z ]*PRIVATE KEY/);
    expect(Object.values(config.data).every((v) => typeof v === 'string')).toBe(true);
  });

  it('every variable of the configuration table (docs/configuration.md) is set by the ConfigMap or the Secret', () => {
    const page = readFileSync(join(REPO_ROOT, 'docs/configuration.md'), 'utf8');
    const section = page.slice(0, page.indexOf('The local stack script'));
    const documented = [...section.matchAll(/^\| (`[A-Z0-9_]+`(?: \/ `[A-Z0-9_]+`)*) \|/gm)].flatMap((m) =>
      [...(m[1] ?? '').matchAll(/`([A-Z0-9_]+)`/g)].map((n) => n[1]),
    );
    expect(documented.length).toBeGreaterThan(30);
    // ADMIN_URL is the admin CLI's, INGEST_OPERATOR names the person running the dead-letter CLI;
    // the image sets CLICKHOUSE_MIGRATIONS_DIR (Dockerfile); pods mount the CRM keys as files (the
    // *_FILE(S) variables), not as PEM text; GATEWAY_ROLE is deprecated (the console is a service).
    const notForPods = new Set([
      'ADMIN_URL',
      'INGEST_OPERATOR',
      'CLICKHOUSE_MIGRATIONS_DIR',
      'CRM_CREDENTIALS_PUBLIC_KEY',
      'CRM_CREDENTIALS_PRIVATE_KEYS',
      'DASHBOARD_SECRET_KEYS_FILE',
      'GATEWAY_ROLE',
    ]);
    // REDIS_URL is set from the Secret's REDIS_URL_<ROLE>: one Redis user per Deployment.
    const set = new Set([...Object.keys(config.data), ...Object.keys(secretTemplate.stringData), 'REDIS_URL']);
    expect(documented.filter((v) => v && !notForPods.has(v) && !set.has(v))).toEqual([]);
  });

  it('the Secret is only a template with placeholders, outside the applied directory, and has every key referenced', () => {
    expect(applied.filter((m) => m.doc.kind === 'Secret')).toEqual([]);
    expect(ofKind('Secret').map((m) => m.file)).toEqual(['deploy/k8s/templates/crm-credentials-keys.example.yaml', 'deploy/k8s/templates/secret.example.yaml']);
    expect(Object.keys(secretTemplate.stringData).sort()).toEqual([
      'ADMIN_TOKEN',
      'ADMIN_TOKEN_PREVIOUS',
      'CLICKHOUSE_ACCESS_PASSWORD',
      'CLICKHOUSE_PASSWORD',
      'CLICKHOUSE_READER_PASSWORD',
      'CRM_OAUTH_HUBSPOT_CLIENT_SECRET',
      'CRM_OAUTH_SALESFORCE_CLIENT_SECRET',
      'CRM_SINK_INTERNAL_TOKEN',
      'CRM_SINK_INTERNAL_TOKEN_PREVIOUS',
      'DASHBOARD_SECRET_KEYS',
      'KAFKA_PASSWORD_ADMIN',
      'KAFKA_PASSWORD_CONSOLE',
      'KAFKA_PASSWORD_CRM_SINK',
      'KAFKA_PASSWORD_INGEST',
      'KAFKA_PASSWORD_PROCESSOR',
      'KAFKA_SSL_CA',
      'REDIS_ADMIN_URL',
      'REDIS_ROLE_PASSWORDS',
      'REDIS_URL_CONSOLE',
      'REDIS_URL_CRM_SINK',
      'REDIS_URL_GATEWAY',
      'REDIS_URL_PROCESSOR',
      'SEEN_IDS_HMAC_KEY',
    ]);
    // ADMIN_TOKEN_PREVIOUS is empty outside a rotation (a placeholder there would be a valid
    // token); an empty KAFKA_SSL_CA means the system CAs; empty OAuth client secrets: no OAuth app;
    // an empty CLICKHOUSE_ACCESS_PASSWORD: no per-account ClickHouse readers.
    const {
      CLICKHOUSE_ACCESS_PASSWORD: access,
      ADMIN_TOKEN_PREVIOUS: previous,
      CRM_SINK_INTERNAL_TOKEN_PREVIOUS: previousChannel,
      KAFKA_SSL_CA: ca,
      CRM_OAUTH_HUBSPOT_CLIENT_SECRET: hubspotSecret,
      CRM_OAUTH_SALESFORCE_CLIENT_SECRET: salesforceSecret,
      ...placeholders
    } = secretTemplate.stringData;
    expect([previous, previousChannel, ca, hubspotSecret, salesforceSecret, access]).toEqual(['', '', '', '', '', '']);
    expect(Object.values(placeholders).every((v) => v.startsWith('REPLACE_ME'))).toBe(true);
    const refs = workloads.flatMap((w) =>
      w.spec.template.spec.containers.flatMap((c) => (c.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : []))),
    );
    expect(refs.length).toBeGreaterThan(0);
    for (const r of refs) {
      expect(r.name).toBe('ingest-secrets');
      expect(Object.keys(secretTemplate.stringData)).toContain(r.key);
    }
    // Only the console holds the admin token.
    const holders = workloads.filter((w) => w.spec.template.spec.containers.some((c) => c.env?.some((e) => e.name === 'ADMIN_TOKEN')));
    expect(holders.map((w) => w.metadata.name)).toEqual(['console']);
    // The seen-id key: the gateway and the console, the two that count events, and no other.
    const counters = workloads.filter((w) => w.spec.template.spec.containers.some((c) => c.env?.some((e) => e.name === 'SEEN_IDS_HMAC_KEY')));
    expect(counters.map((w) => w.metadata.name).sort()).toEqual(['console', 'gateway']);
  });

  it('each deployable has its own Kafka principal over TLS with SCRAM, its password from the Secret; setup creates their ACLs', () => {
    const env = (name: string) =>
      (named(name === 'ingest-setup' ? 'Job' : 'Deployment', name) as unknown as Workload).spec.template.spec.containers[0]?.env ?? [];
    expect(config.data.KAFKA_SSL).toBe('true');
    expect(config.data.KAFKA_SASL_MECHANISM).toBe('SCRAM-SHA-512');
    const principals = Object.fromEntries(
      ['gateway', 'console', 'processor', 'crm-sink', 'ingest-setup'].map((name) => {
        const e = env(name);
        expect(e.find((v) => v.name === 'KAFKA_SASL_PASSWORD')?.valueFrom?.secretKeyRef?.name, name).toBe('ingest-secrets');
        return [name, e.find((v) => v.name === 'KAFKA_SASL_USERNAME')?.value];
      }),
    );
    expect(principals).toEqual({ gateway: 'ingest', console: 'console', processor: 'processor', 'crm-sink': 'crm-sink', 'ingest-setup': 'admin' });
    const acls = env('ingest-setup').find((v) => v.name === 'KAFKA_ACL_PRINCIPALS')?.value ?? '';
    for (const role of ['ingest=User:ingest', 'console=User:console', 'processor=User:processor', 'crm-sink=User:crm-sink'])
      expect(acls.split(',')).toContain(role);
    // The gateway serves /v1 only; the console, a service of its own, the dashboard and the admin
    // API. No pod names the deprecated GATEWAY_ROLE (the console refused as a gateway role).
    expect(config.data.GATEWAY_ROLE).toBeUndefined();
    for (const name of ['gateway', 'console'])
      expect(
        env(name).find((v) => v.name === 'GATEWAY_ROLE'),
        name,
      ).toBeUndefined();
  });

  it("credentials come from Secrets: the gateway and the console read ClickHouse as the read-only user; each service's REDIS_URL is its own Redis user's", () => {
    const env = (name: string) => deployment(name).spec.template.spec.containers[0]?.env ?? [];
    for (const name of ['gateway', 'console']) {
      expect(env(name).find((e) => e.name === 'CLICKHOUSE_USER')?.value, name).toBe(config.data.CLICKHOUSE_READER_USER);
      expect(env(name).find((e) => e.name === 'CLICKHOUSE_PASSWORD')?.valueFrom?.secretKeyRef?.key, name).toBe('CLICKHOUSE_READER_PASSWORD');
    }
    expect(env('processor').find((e) => e.name === 'CLICKHOUSE_PASSWORD')?.valueFrom?.secretKeyRef?.key).toBe('CLICKHOUSE_PASSWORD');
    // One Redis ACL user per Deployment (redis-acl.ts): the URL in the Secret names that user.
    for (const name of REDIS_ROLES) {
      const key = `REDIS_URL_${name.toUpperCase().replace('-', '_')}`;
      expect(env(name).find((e) => e.name === 'REDIS_URL')?.valueFrom?.secretKeyRef?.key, name).toBe(key);
      expect(secretTemplate.stringData[key], key).toMatch(new RegExp(`^REPLACE_ME_rediss?://${name}:`));
    }
    const setupEnv = (named('Job', 'ingest-setup') as unknown as Workload).spec.template.spec.containers[0]?.env ?? [];
    for (const key of ['REDIS_ADMIN_URL', 'REDIS_ROLE_PASSWORDS']) expect(setupEnv.find((e) => e.name === key)?.valueFrom?.secretKeyRef?.key, key).toBe(key);
  });

  it('crm-sink alone mounts the private key (a Secret); the console gets the public key only', () => {
    type Volume = { name: string; secret?: { secretName: string; defaultMode?: number }; configMap?: { name: string } };
    type Mount = { name: string; mountPath: string; readOnly?: boolean };
    const podOf = (w: Workload) => w.spec.template.spec as PodSpec & { volumes?: Volume[]; containers: (Container & { volumeMounts?: Mount[] })[] };
    const holders = (pred: (v: Volume) => boolean) => workloads.filter((w) => (podOf(w).volumes ?? []).some(pred)).map((w) => w.metadata.name);
    expect(holders((v) => v.secret?.secretName === 'crm-credentials-private-key')).toEqual(['crm-sink']);
    expect(holders((v) => v.configMap?.name === 'crm-credentials-public-key')).toEqual(['console']);
    const sink = podOf(deployment('crm-sink'));
    const privateVolume = sink.volumes?.find((v) => v.secret?.secretName === 'crm-credentials-private-key');
    expect(privateVolume?.secret?.defaultMode).toBe(0o440);
    const mount = sink.containers[0]?.volumeMounts?.find((m) => m.name === privateVolume?.name);
    expect(mount?.readOnly).toBe(true);
    expect(config.data.CRM_CREDENTIALS_PRIVATE_KEY_FILES?.startsWith(`${mount?.mountPath}/`)).toBe(true);
    const consoleMount = podOf(deployment('console')).containers[0]?.volumeMounts?.find((m) => m.name === 'crm-public-key');
    expect(config.data.CRM_CREDENTIALS_PUBLIC_KEY_FILE?.startsWith(`${consoleMount?.mountPath}/`)).toBe(true);
    // The private key's template is a Secret; the public key's a ConfigMap, both placeholders.
    const keys = manifests.filter((m) => m.file.endsWith('crm-credentials-keys.example.yaml')).map((m) => m.doc.kind);
    expect(keys).toEqual(['Secret', 'ConfigMap']);
    expect(config.data.CRM_CREDENTIALS_ALLOW_PLAINTEXT).toBe('false');
  });

  it('every pod takes its configuration from the ConfigMap and names its SERVICE', () => {
    const expected: Record<string, string> = {
      gateway: 'gateway',
      console: 'console',
      processor: 'processor',
      'crm-sink': 'crm-sink',
      'ingest-setup': 'setup',
    };
    for (const w of workloads) {
      const [c] = w.spec.template.spec.containers;
      expect(c?.envFrom, w.metadata.name).toEqual([{ configMapRef: { name: 'ingest-config' } }]);
      expect(c?.env?.find((e) => e.name === 'SERVICE')?.value, w.metadata.name).toBe(expected[w.metadata.name]);
      expect((c?.env ?? []).map((e) => e.name).filter((n) => n !== 'SERVICE' && !defined.has(n))).toEqual([]);
    }
  });
});

describe('network policies', () => {
  type Peer = { ipBlock?: { cidr: string; except?: string[] }; namespaceSelector?: { matchLabels?: Record<string, string> }; podSelector?: unknown };
  type Rule = { from?: Peer[]; to?: Peer[]; ports?: { port: number; protocol?: string }[] };
  type Policy = {
    metadata: { name: string };
    spec: {
      podSelector: { matchLabels?: Record<string, string>; matchExpressions?: { values: string[] }[] };
      policyTypes: string[];
      ingress?: Rule[];
      egress?: Rule[];
    };
  };
  const policies = ofKind('NetworkPolicy').map((m) => m.doc as unknown as Policy);
  const selects = (p: Policy, app: string) =>
    Object.keys(p.spec.podSelector).length === 0 ||
    p.spec.podSelector.matchLabels?.['app.kubernetes.io/name'] === app ||
    (p.spec.podSelector.matchExpressions ?? []).some((e) => e.values.includes(app));
  const rulesFor = (app: string, kind: 'ingress' | 'egress') => policies.filter((p) => selects(p, app)).flatMap((p) => p.spec[kind] ?? []);
  const PRIVATE = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '127.0.0.0/8', '169.254.0.0/16', '100.64.0.0/10'];

  it('deny everything by default, for every pod of the namespace, both ways', () => {
    const deny = policies.find((p) => Object.keys(p.spec.podSelector).length === 0 && !p.spec.ingress && !p.spec.egress);
    expect(deny?.spec.policyTypes.sort()).toEqual(['Egress', 'Ingress']);
  });

  it('only the gateway and the console take ingress from anywhere, on their API port; the others only Prometheus on their ops port', () => {
    const open = (app: string) => rulesFor(app, 'ingress').filter((r) => !r.from || r.from.length === 0);
    expect(open('gateway').flatMap((r) => r.ports?.map((p) => p.port))).toEqual([Number(config.data.GATEWAY_PORT)]);
    expect(open('console').flatMap((r) => r.ports?.map((p) => p.port))).toEqual([Number(config.data.CONSOLE_PORT)]);
    // Beside Prometheus, crm-sink takes the console's pods on its connection channel's port, and nothing else.
    const fromConsole = (r: Rule) =>
      r.from?.every((f) => (f.podSelector as { matchLabels?: Record<string, string> } | undefined)?.matchLabels?.['app.kubernetes.io/name'] === 'console');
    for (const app of ['processor', 'crm-sink']) {
      expect(open(app), app).toEqual([]);
      for (const r of rulesFor(app, 'ingress')) {
        if (app === 'crm-sink' && fromConsole(r)) expect(r.ports?.map((p) => p.port)).toEqual([Number(config.data.CRM_SINK_INTERNAL_PORT)]);
        else expect(r.from?.every((f) => f.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'monitoring')).toBe(true);
      }
    }
    // The admin API's port is reachable by no rule.
    expect(policies.flatMap((p) => p.spec.ingress ?? []).flatMap((r) => r.ports?.map((x) => x.port) ?? [])).not.toContain(Number(config.data.ADMIN_PORT));
  });

  it('crm-sink reaches the internet on 443 but no private range; no other pod reaches outside its dependencies', () => {
    const internet = (app: string) => rulesFor(app, 'egress').flatMap((r) => (r.to ?? []).filter((t) => t.ipBlock));
    const v4 = internet('crm-sink').find((t) => t.ipBlock?.cidr === '0.0.0.0/0');
    expect(v4?.ipBlock?.except).toEqual(expect.arrayContaining(PRIVATE));
    expect(internet('crm-sink').find((t) => t.ipBlock?.cidr === '::/0')?.ipBlock?.except).toEqual(expect.arrayContaining(['fc00::/7', 'fe80::/10', '::1/128']));
    expect(
      rulesFor('crm-sink', 'egress')
        .filter((r) => r.to?.some((t) => t.ipBlock))
        .flatMap((r) => r.ports?.map((p) => p.port)),
    ).toEqual([443]);
    for (const app of ['gateway', 'console', 'processor']) expect(internet(app), app).toEqual([]);
    // Every egress rule names where it goes: an empty `to` would allow everything.
    for (const p of policies) for (const r of p.spec.egress ?? []) expect(r.to?.length, p.metadata.name).toBeGreaterThan(0);
  });
});

describe('workloads', () => {
  const port = (c: Container, p: number | string | undefined) => (typeof p === 'number' ? p : c.ports?.find((x) => x.name === p)?.containerPort);

  it.each([
    ['gateway', 'GATEWAY_OPS_PORT', 3100],
    ['console', 'CONSOLE_OPS_PORT', 3103],
    ['processor', 'PROCESSOR_OPS_PORT', 3101],
    ['crm-sink', 'CRM_SINK_OPS_PORT', 3102],
  ] as const)('%s: /readyz and /healthz probes on the ops port (%s)', (name, variable, ops) => {
    const c = deployment(name).spec.template.spec.containers[0] as Container;
    expect(Number(config.data[variable])).toBe(ops);
    expect(config.data[variable.replace('_PORT', '_HOST')]).toBe('0.0.0.0');
    expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(port(c, c.readinessProbe?.httpGet?.port)).toBe(ops);
    expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(port(c, c.livenessProbe?.httpGet?.port)).toBe(ops);
  });

  it('the gateway and the console serve their API and dashboard ports, as configured', () => {
    for (const [name, variable] of [
      ['gateway', 'GATEWAY_PORT'],
      ['console', 'CONSOLE_PORT'],
    ] as const) {
      const c = deployment(name).spec.template.spec.containers[0] as Container;
      expect(port(c, 'http'), name).toBe(Number(config.data[variable]));
      expect(config.data[variable.replace('_PORT', '_HOST')]).toBe('0.0.0.0');
    }
  });

  it('every container has requests and limits, runs as non-root on a read-only root filesystem (restricted)', () => {
    for (const w of workloads) {
      const pod = w.spec.template.spec;
      expect(pod.securityContext?.runAsNonRoot, w.metadata.name).toBe(true);
      expect(pod.securityContext?.runAsUser, w.metadata.name).toBeGreaterThan(0);
      expect(pod.securityContext?.seccompProfile?.type, w.metadata.name).toBe('RuntimeDefault');
      for (const c of pod.containers) {
        expect(Object.keys(c.resources?.requests ?? {}).sort(), c.name).toEqual(['cpu', 'memory']);
        expect(Object.keys(c.resources?.limits ?? {}).sort(), c.name).toEqual(['cpu', 'memory']);
        expect(c.securityContext, c.name).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
      }
    }
    const ns = named('Namespace', 'ingest') as unknown as { metadata: { labels: Record<string, string> } };
    expect(ns.metadata.labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
  });

  it("every workload runs its deployable's image (the Dockerfile's target; setup the processor's), all of one tag, and stops within its grace period", () => {
    const images = Object.fromEntries(workloads.map((w) => [w.metadata.name, w.spec.template.spec.containers.map((c) => c.image)]));
    // The release's version (docs/releases.md: `npm run release` sets both).
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(images).toEqual({
      gateway: [`event-ingestion/gateway:${version}`],
      console: [`event-ingestion/console:${version}`],
      processor: [`event-ingestion/processor:${version}`],
      'crm-sink': [`event-ingestion/crm-sink:${version}`],
      'ingest-setup': [`event-ingestion/processor:${version}`],
    });
    for (const name of ['gateway', 'console', 'processor', 'crm-sink']) {
      expect((deployment(name).spec.template.spec.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(Number(config.data.SHUTDOWN_TIMEOUT_MS));
    }
  });

  it('selectors match their pod templates; Services, HPA and PDBs select an existing workload', () => {
    const templates = workloads.map((w) => w.spec.template.metadata?.labels ?? {});
    const selects = (selector: Record<string, string>) => templates.some((labels) => Object.entries(selector).every(([k, v]) => labels[k] === v));
    for (const w of workloads.filter((x) => x.spec.selector)) expect(selects(w.spec.selector?.matchLabels ?? {}), w.metadata.name).toBe(true);
    for (const s of ofKind('Service')) {
      const spec = s.doc.spec as { selector: Record<string, string>; ports: { targetPort: string }[] };
      expect(selects(spec.selector), s.doc.metadata?.name).toBe(true);
      const target = workloads.find((w) => Object.entries(spec.selector).every(([k, v]) => w.spec.template.metadata?.labels?.[k] === v));
      for (const p of spec.ports) expect(target?.spec.template.spec.containers[0]?.ports?.map((x) => x.name)).toContain(p.targetPort);
    }
    for (const p of ofKind('PodDisruptionBudget'))
      expect(selects((p.doc.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels)).toBe(true);
    expect(
      ofKind('PodDisruptionBudget')
        .map((p) => p.doc.metadata?.name)
        .sort(),
    ).toEqual(['console', 'crm-sink', 'gateway', 'processor']);
    const hpa = named('HorizontalPodAutoscaler', 'gateway') as unknown as {
      spec: { scaleTargetRef: { kind: string; name: string }; minReplicas: number; metrics: { resource: { name: string } }[] };
    };
    expect(hpa.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: 'gateway' });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2); // a PDB of maxUnavailable 1 must leave one serving
    expect(hpa.spec.metrics.map((m) => m.resource.name)).toEqual(['cpu']);
  });

  it('the processor has no more replicas than the partitions of the topics it consumes', () => {
    const replicas = deployment('processor').spec.replicas ?? 1;
    expect(replicas).toBeLessThanOrEqual(Math.min(TOPICS.eventsRaw.partitions, TOPICS.eventsUnique.partitions));
    expect(Number(config.data.STORAGE_CONCURRENCY)).toBe(TOPICS.eventsUnique.partitions);
    expect(ofKind('HorizontalPodAutoscaler').map((h) => (h.doc.spec as { scaleTargetRef: { name: string } }).scaleTargetRef.name)).not.toContain('processor');
  });

  it('the setup job runs once to completion', () => {
    const job = named('Job', 'ingest-setup') as unknown as Workload;
    expect(['OnFailure', 'Never']).toContain(job.spec.template.spec.restartPolicy);
  });
});

describe('Prometheus on Kubernetes (deploy/prometheus/prometheus-kubernetes.yml)', () => {
  it('discovers the headless metrics Services of the manifests, on the ops ports, as jobs gateway, console, processor and crm-sink', () => {
    const prom = parse(readFileSync(join(REPO_ROOT, 'deploy/prometheus/prometheus-kubernetes.yml'), 'utf8')) as {
      scrape_configs: { job_name: string; dns_sd_configs: { names: string[]; port: number }[] }[];
    };
    const jobs = Object.fromEntries(prom.scrape_configs.map((s) => [s.job_name, s.dns_sd_configs[0]]));
    const names: Record<string, string[]> = {};
    for (const [job, service, ops] of [
      ['gateway', 'gateway-metrics', 3100],
      ['console', 'console-metrics', 3103],
      ['processor', 'processor-metrics', 3101],
      ['crm-sink', 'crm-sink-metrics', 3102],
    ] as const) {
      const svc = named('Service', service) as unknown as {
        metadata: { namespace: string };
        spec: { clusterIP: string; publishNotReadyAddresses: boolean; ports: { port: number }[] };
      };
      expect(svc.spec.clusterIP).toBe('None');
      expect(svc.spec.publishNotReadyAddresses).toBe(true);
      expect(svc.spec.ports[0]?.port).toBe(ops);
      (names[job] ??= []).push(`${service}.${svc.metadata.namespace}.svc.cluster.local`);
      expect(jobs[job]).toEqual({ names: expect.arrayContaining(names[job]) as unknown, type: 'A', port: ops, refresh_interval: '30s' });
    }
    for (const [job, list] of Object.entries(names)) expect(jobs[job]?.names, job).toHaveLength(list.length);
  });
});

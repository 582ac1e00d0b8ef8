/**
 * Real servers: the secure Kafka broker (TLS with the stack's own CA, SASL/SCRAM, the KRaft
 * StandardAuthorizer denying what no ACL allows), ClickHouse, Redis; the gateway, the processor
 * and the crm-sink as real OS processes, each with its own principal; a fake HubSpot over HTTP.
 *
 * What docs/security.md ("Kafka principals and ACLs") promises: the pipeline runs end to end
 * over SASL_SSL with the ACLs of kafka/acls.ts and nothing more; a client without credentials
 * or without TLS is refused; the ingest and processor principals cannot write control.apikeys;
 * the crm-sink cannot even see it; a wrong password or an untrusted certificate stops a
 * service at start with a message naming the setting. OAUTHBEARER: a token of the broker's
 * issuer authenticates its subject, with that principal's ACLs; a token signed by another key,
 * expired or for another audience is refused, and a service started with one exits naming
 * KAFKA_SASL_OAUTHBEARER_TOKEN_FILE.
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { CrmMapping } from '@ingest/schemas';
import { createControlPlane } from '@ingest/domain';
import {
  applyAcls,
  CONTROL_PLANE_GROUP_PREFIX,
  type ControlTopicKey,
  controlTopicsRead,
  createBatchConsumer,
  createProducer,
  KAFKA_DRIVERS,
  type KafkaClient,
  KafkaError,
  type KafkaDriverName,
  REPO_ROOT,
  retiredAclBindings,
  sql,
  TOPICS,
  withAdmin,
} from '@ingest/platform';
import {
  createSecureTestKafka,
  createTestClickHouse,
  integrationEnv,
  secureKafkaClient,
  SECURE_PRINCIPALS,
  secureOAuthTokenFile,
  secureUserEnv,
  type TestClickHouse,
  type TestKafka,
  testCredentialKeys,
  testLogger,
  uniqueSuffix,
  waitFor,
} from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ConsoleProcess, type GatewayProcess, ProcessorFleet, processorSetup, SinkFleet, startConsoleProcess, startGatewayProcess } from '@ingest/testkit';
import { type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';

let kafka: TestKafka;
/** The console's admin token (32 bytes at least). */
const SECURE_ADMIN_TOKEN = `secure-admin-${'0123456789abcdef'.repeat(3)}`;

beforeAll(async () => {
  kafka = await createSecureTestKafka(Object.keys(TOPICS) as (keyof typeof TOPICS)[]);
});

afterAll(async () => {
  await kafka?.cleanup();
});

describe('the pipeline over SASL_SSL, each service with its own principal', () => {
  let clickhouse: TestClickHouse | undefined;
  let crm: FakeCrm | undefined;
  let gateway: GatewayProcess | undefined;
  let consoleProcess: ConsoleProcess | undefined;
  let processors: ProcessorFleet | undefined;
  let sinks: SinkFleet | undefined;
  const closers: (() => Promise<unknown>)[] = [];

  afterAll(async () => {
    await gateway?.kill();
    await consoleProcess?.kill();
    await processors?.killAll();
    await sinks?.killAll();
    for (const close of closers.splice(0).reverse()) await close().catch(() => {});
    await crm?.stop();
    await clickhouse?.cleanup();
  });

  it('takes events in through the ingest gateway, stores them in ClickHouse and syncs them to the CRM; the console writes the control plane', async () => {
    clickhouse = await createTestClickHouse();
    const servers = { KAFKA_TOPIC_PREFIX: kafka.prefix, CLICKHOUSE_DATABASE: clickhouse.database };
    // The console and the gateway, each with its own principal: the console (admin API and
    // dashboard) writes the control plane; the gateway (public /v1) may not.
    consoleProcess = await startConsoleProcess('secure-console', {
      ...secureUserEnv('console'),
      ...servers,
      ADMIN_TOKEN: SECURE_ADMIN_TOKEN,
    });
    // As on Kubernetes, the shared configuration names crm-sink's public key file, which the
    // ingest gateway's pods do not mount: it stores no credential and must not need it.
    gateway = await startGatewayProcess('secure-ingest', {
      ...secureUserEnv('ingest'),
      ...servers,
      CRM_CREDENTIALS_PUBLIC_KEY_FILE: '/nonexistent/crm-public-key.pem',
    });
    const adminUrl = consoleProcess.adminUrl ?? never('the console has no admin listener');
    const admin = async <T>(method: string, path: string, body: unknown): Promise<T> => {
      const res = await fetch(`${adminUrl}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${SECURE_ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return JSON.parse(text) as T;
    };
    const account = await admin<{ id: string }>('POST', '/accounts', { name: 'Secure', plan: 'growth' });
    const { apiKey } = await admin<{ apiKey: string }>('POST', `/accounts/${account.id}/keys`, { name: 'secure' });

    // The CRM credential and mapping straight through the control plane, as the console
    // principal (the admin API would refuse the fake CRM's loopback address).
    const consoleKafka = secureKafkaClient('console');
    const producer = createProducer(consoleKafka);
    await producer.connect();
    closers.push(() => producer.disconnect());
    // Credentials sealed for crm-sink's key, as the console seals them.
    const controlPlane = createControlPlane({
      kafka: consoleKafka,
      producer,
      topicPrefix: kafka.prefix,
      logger: testLogger(),
      credentialSealer: testCredentialKeys().sealer,
    });
    await controlPlane.start();
    closers.push(() => controlPlane.stop());
    const token = `tok-secure-${uniqueSuffix()}`;
    crm = await startFakeCrm({ tokens: [token] });
    const mapping: CrmMapping = {
      version: 1,
      crm: { type: 'hubspot', credentialsRef: 'hubspot-secure' },
      rules: [{ id: 'signup', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'increment', field: 'signups' }] }],
    };
    await controlPlane.putCrmCredential(account.id, mapping.crm.credentialsRef, { type: 'hubspot', accessToken: token, baseUrl: crm.url });
    await controlPlane.putMapping(account.id, mapping, 'admin');

    // Group names keep the prefixes the ACLs grant (processor-*, crm-sink*).
    const suffix = uniqueSuffix();
    const setup = {
      ...processorSetup(kafka.prefix, clickhouse.database, 'secure-processor', secureUserEnv('processor')),
      groups: {
        storage: `processor-storage-${suffix}`,
        dedupe: `processor-dedupe-${suffix}`,
        jobs: `processor-jobs-${suffix}`,
        ledger: `processor-ledger-${suffix}`,
      },
    };
    processors = new ProcessorFleet(setup);
    sinks = new SinkFleet({
      topicPrefix: kafka.prefix,
      redisKeyPrefix: `t${suffix}:`,
      groupId: `crm-sink-secure-${suffix}`,
      label: 'secure-sink',
      env: secureUserEnv('crm-sink'),
    });
    const [processor, sink] = await Promise.all([processors.start(), sinks.start()]);

    // The ingest gateway learns the console's new key from the control plane (within the
    // revocation bound), and takes events with it.
    const ingestUrl = gateway.url;
    await waitFor(
      async () => {
        const res = await fetch(`${ingestUrl}/v1/events`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            events: [
              { eventId: 'secure-1', eventName: 'Signed Up', email: 'ada@acme.io' },
              { eventId: 'secure-2', eventName: 'Page Viewed', email: 'ada@acme.io' },
            ],
          }),
        });
        if (res.status !== 202) throw new Error(`${res.status} ${await res.text()}`);
        return true;
      },
      { description: 'the ingest gateway accepting events with the key the console made', timeoutMs: 30_000, intervalMs: 500 },
    );
    // Each serves its own surfaces only.
    expect((await fetch(`${ingestUrl}/dashboard/`)).status).toBe(404);
    expect((await fetch(`${consoleProcess.url}/v1/usage`, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(404);

    const ch = clickhouse.ch;
    await waitFor(
      async () => {
        const rows = await ch.query<{ id: string }>(sql`SELECT event_id AS id FROM events WHERE account_id = ${account.id} ORDER BY id`);
        if (rows.length < 2) throw new Error(`${rows.length} of 2 events in ClickHouse: ${JSON.stringify(rows)}`);
        return rows;
      },
      { description: 'both events in ClickHouse', timeoutMs: 60_000, intervalMs: 500 },
    );
    const fake = crm;
    await waitFor(
      () => {
        const calls = fake.calls.filter((c) => c.token === token && c.method !== 'GET');
        if (calls.length === 0) throw new Error(`no CRM write yet; calls so far: ${JSON.stringify(fake.calls.map((c) => `${c.method} ${c.path}`))}`);
        return true;
      },
      { description: 'a CRM write with the account token', timeoutMs: 60_000, intervalMs: 500 },
    );

    // Every process alive and healthy, and none was ever refused by an ACL on the way.
    expect([gateway.exitStatus(), consoleProcess.exitStatus(), processor.exitStatus(), sink.exitStatus()]).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect({ processor: await processor.health(), sink: await sink.health() }).toEqual({
      processor: { live: 200, ready: 200 },
      sink: { live: 200, ready: 200 },
    });
    const refused = [gateway.logFile, consoleProcess.logFile, processor.logFile, sink.logFile].filter((f) =>
      /AUTHORIZATION_FAILED|not authorized/i.test(readFileSync(f, 'utf8')),
    );
    expect(refused).toEqual([]);
  });
});

/** A consumer as a control plane runs one (its group prefix) on `key`: did it start, or why not. */
async function consumeAs(client: KafkaClient, key: ControlTopicKey, seen: string[] = []): Promise<{ started: boolean; err?: unknown }> {
  const consumer = createBatchConsumer(client, {
    name: `secure-${key}`,
    groupId: `${CONTROL_PLANE_GROUP_PREFIX}secure.${uniqueSuffix()}`,
    topics: [kafka.topic(key)],
    fromBeginning: true,
    commitOffsets: false,
    logger: testLogger(),
    handleBatch: async (messages) => void seen.push(...messages.map((m) => `${m.topic}:${m.key}`)),
  });
  try {
    await consumer.start();
    return { started: true };
  } catch (err) {
    return { started: false, err };
  } finally {
    await consumer.stop().catch(() => {});
  }
}

describe.each(KAFKA_DRIVERS as readonly KafkaDriverName[])('what the secure broker refuses (%s)', (driver) => {
  const noSasl = { KAFKA_SASL_MECHANISM: '', KAFKA_SASL_USERNAME: '', KAFKA_SASL_PASSWORD_FILE: '' };

  it('refuses a client without credentials and a plaintext client, and serves one with both', async () => {
    const listTopics = (override: Record<string, string | boolean>) => withAdmin(secureKafkaClient('admin', { driver, override }), (a) => a.listTopics());
    await expect(listTopics({})).resolves.toContain(kafka.topic('controlApiKeys'));
    await expect(listTopics(noSasl)).rejects.toBeInstanceOf(KafkaError);
    // A valid password does not help without TLS: there is no plaintext listener.
    await expect(listTopics({ KAFKA_SSL: false, KAFKA_SSL_CA: '' })).rejects.toBeInstanceOf(KafkaError);
    await expect(listTopics({ ...noSasl, KAFKA_SSL: false, KAFKA_SSL_CA: '' })).rejects.toBeInstanceOf(KafkaError);
  });

  it.each(['SCRAM-SHA-256', 'PLAIN'])('serves %s over TLS as well as SCRAM-SHA-512', async (mechanism) => {
    const topics = await withAdmin(secureKafkaClient('ingest', { driver, override: { KAFKA_SASL_MECHANISM: mechanism } }), (a) => a.listTopics());
    expect(topics).toContain(kafka.topic('eventsRaw'));
  });

  it.each(['ingest', 'processor'] as const)('refuses the %s principal a write to control.apikeys, with an authorization error', async (user) => {
    const producer = createProducer(secureKafkaClient(user, { driver }));
    await producer.connect();
    try {
      // What it may write goes through (the producer and its connection are fine).
      await producer.send(kafka.topic(user === 'ingest' ? 'eventsRaw' : 'eventsUnique'), [{ key: 'k', value: 'v' }]);
      const refused = await producer.send(kafka.topic('controlApiKeys'), [{ key: 'key-1', value: '{"minted":true}' }]).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(KafkaError);
      expect(refused).toMatchObject({ code: 'kafka_not_authorized', retryable: false, message: expect.stringMatching(/TOPIC_AUTHORIZATION_FAILED/) });
    } finally {
      await producer.disconnect();
    }
  });

  it('refuses a consumer on control.owners as the ingest principal, and serves it the control topics of its role', async () => {
    const client = secureKafkaClient('ingest', { driver });
    const seen: string[] = [];
    const consume = (key: ControlTopicKey) => consumeAs(client, key, seen);
    // A record it would read if it could: an owner as the console writes one.
    const producer = createProducer(secureKafkaClient('console', { driver }));
    await producer.connect();
    try {
      await producer.send(kafka.topic('controlOwners'), [{ key: 'owner@secure.example', value: '{"v":1}' }]);
    } finally {
      await producer.disconnect();
    }
    expect(controlTopicsRead('ingest')).toEqual(['controlAccounts', 'controlApiKeys']);
    for (const key of controlTopicsRead('ingest')) expect(await consume(key), key).toEqual({ started: true });
    const owners = await consume('controlOwners');
    expect(owners.started).toBe(false);
    expect(owners.err).toMatchObject({ message: expect.stringMatching(/TOPIC_AUTHORIZATION_FAILED|not authorized/i) });
    expect(seen.filter((s) => s.startsWith(kafka.topic('controlOwners')))).toEqual([]);
    // Nor does it see the topic at all.
    const topics = await withAdmin(client, (a) => a.listTopics());
    expect(topics).toContain(kafka.topic('controlApiKeys'));
    expect(topics).not.toContain(kafka.topic('controlOwners'));
  });

  it('removes the control. prefix grants of earlier versions when setup applies the ACLs again (an upgrade)', async () => {
    const admin = secureKafkaClient('admin', { driver });
    const ingest = secureKafkaClient('ingest', { driver });
    // As an earlier version's setup left it: ingest reads every control topic.
    await withAdmin(admin, (a) => a.createAcls(retiredAclBindings('User:ingest', kafka.prefix)));
    try {
      expect(await consumeAs(ingest, 'controlOwners')).toEqual({ started: true });
      await applyAcls(admin, { principals: SECURE_PRINCIPALS, topicPrefix: kafka.prefix, logger: testLogger() });
      expect(await consumeAs(ingest, 'controlOwners')).toMatchObject({ started: false });
      expect(await consumeAs(ingest, 'controlApiKeys')).toEqual({ started: true });
    } finally {
      await withAdmin(admin, (a) => a.deleteAcls(retiredAclBindings('User:ingest', kafka.prefix)));
    }
  });

  /** `user`'s settings with OAUTHBEARER and this token file instead of a password. */
  const oauth = (tokenFile: string) => ({
    KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
    KAFKA_SASL_USERNAME: '',
    KAFKA_SASL_PASSWORD_FILE: '',
    KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: tokenFile,
  });

  it("serves OAUTHBEARER with a token of the broker's issuer: the principal is its subject, with that subject's ACLs", async () => {
    const producer = createProducer(secureKafkaClient('processor', { driver, override: oauth(secureOAuthTokenFile('processor')) }));
    await producer.connect();
    try {
      await producer.send(kafka.topic('eventsUnique'), [{ key: 'k', value: 'v' }]);
      const refused = await producer.send(kafka.topic('controlApiKeys'), [{ key: 'key-1', value: '{"minted":true}' }]).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toMatchObject({ code: 'kafka_not_authorized', message: expect.stringMatching(/TOPIC_AUTHORIZATION_FAILED/) });
    } finally {
      await producer.disconnect();
    }
  });

  it.each([
    ['signed by another key', { key: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey }],
    ['expired', { expiresInS: -600 }],
    ['for another audience', { audience: 'not-kafka' }],
    ['from another issuer', { issuer: 'someone-else' }],
  ])('refuses an OAUTHBEARER token %s', async (_what, options) => {
    const listTopics = withAdmin(secureKafkaClient('admin', { driver, override: oauth(secureOAuthTokenFile('admin', options)) }), (a) => a.listTopics());
    // kafkajs ignores the broker's refusal document and only sees the connection closed after
    // it, so to it a refused token looks like unreachable brokers (docs/security.md).
    await expect(listTopics).rejects.toMatchObject({ code: driver === 'kafkajs' ? 'kafka_unavailable' : 'kafka_auth_failed' });
  });

  it('does not even show the crm-sink control.apikeys or control.owners', async () => {
    const topics = await withAdmin(secureKafkaClient('crm-sink', { driver }), (a) => a.listTopics());
    expect(topics).toContain(kafka.topic('controlMappings'));
    expect(topics).toContain(kafka.topic('controlCrmCredentials'));
    // Accounts: a suspended account's CRM sync is held.
    expect(topics).toContain(kafka.topic('controlAccounts'));
    expect(topics).not.toContain(kafka.topic('controlApiKeys'));
    expect(topics).not.toContain(kafka.topic('controlOwners'));
  });
});

/** Starts the processor's main.ts with `env` and resolves its exit code and output once it exits. */
function runProcessorUntilExit(env: Record<string, string>, timeoutMs: number): Promise<{ code: number | string; output: string; ms: number }> {
  const servers = integrationEnv();
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', 'tsx', 'services/processor/src/main.ts'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      LOG_LEVEL: 'info',
      CLICKHOUSE_URL: servers.clickhouseUrl,
      REDIS_URL: servers.redisUrl,
      PROCESSOR_OPS_PORT: '0',
      ...env,
    },
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal ?? 'unknown', output, ms: Date.now() - started });
    });
  });
}

describe('a service started with wrong Kafka security settings', () => {
  it('exits at once on a wrong password, naming the setting, the user and the mechanism', async () => {
    const { KAFKA_SASL_PASSWORD_FILE: _file, ...env } = secureUserEnv('processor');
    const run = await runProcessorUntilExit({ ...env, KAFKA_SASL_PASSWORD: 'not-the-password', KAFKA_TOPIC_PREFIX: kafka.prefix }, 30_000);
    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain('KAFKA_SASL_PASSWORD: authentication failed for user processor (SCRAM-SHA-512)');
  });

  it('exits at once on an OAUTHBEARER token the broker refuses, naming the token file and its subject', async () => {
    const { KAFKA_SASL_PASSWORD_FILE: _file, KAFKA_SASL_USERNAME: _user, ...env } = secureUserEnv('processor');
    const tokenFile = secureOAuthTokenFile('processor', { key: generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey });
    const run = await runProcessorUntilExit(
      { ...env, KAFKA_SASL_MECHANISM: 'OAUTHBEARER', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: tokenFile, KAFKA_TOPIC_PREFIX: kafka.prefix },
      30_000,
    );
    expect(run.code, run.output).toBe(1);
    expect(run.output).toContain('KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: the broker refused the token of subject processor (OAUTHBEARER)');
  });

  it('exits at once on a broker certificate it does not trust, naming KAFKA_SSL_CA', async () => {
    const { KAFKA_SSL_CA: _ca, ...env } = secureUserEnv('processor');
    const run = await runProcessorUntilExit({ ...env, KAFKA_TOPIC_PREFIX: kafka.prefix }, 30_000);
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/KAFKA_SSL_CA \(unset, so the system CAs\): the broker's certificate is not trusted \(SELF_SIGNED_CERT_IN_CHAIN\)/);
  });
});

function never(what: string): never {
  throw new Error(what);
}

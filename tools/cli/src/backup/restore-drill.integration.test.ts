/**
 * Real servers: Kafka, ClickHouse, Redis. The restore drill of docs/runbook.md ("Backup and
 * restore"): a stack state under one topic prefix and database (an account, an owner with a
 * password and a removed one, an API key, a CRM mapping, a sealed CRM credential, events stored
 * through the writer's line in two monthly partitions with an unmerged duplicate, a billing
 * ledger record and audit records copied by the real processor) is backed up with
 * `ingest backup`, restored with `ingest restore` into a fresh prefix and database, and a gateway
 * and console started on the restored ones must serve the same: the owner signs in, the key
 * authenticates, the ledger and the audit log read the same, every event is there, the rollups
 * equal the source's (and were not fed twice).
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { API_KEY_SCOPES } from '@ingest/domain';
import { committedOffsets, type Component, type ConsumedMessage, readTopicToEnd, topicOffsets, TOPICS, type TopicKey } from '@ingest/platform';
import { createTestClickHouse, createTestKafka, integrationEnv, storedEvent, storeEvents, testLogger, waitFor } from '@ingest/testkit';
import { ADMIN_TOKEN, createGatewayFixture, createOwner, type GatewayFixture, randomClientIp, signInRequest } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runIngest } from '../ingest.js';

const SECRET_TOKEN = 'pat-na1-DRILL-hubspot-secret-4711';
const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
const mapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'main' },
  rules: [{ id: 'signup', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'plan', from: { property: 'plan' } }] }],
};

let source: GatewayFixture;
let restored: GatewayFixture | undefined;
let processor: Component[] = [];
let dir: string;
let accountId: string;
let apiKey: string;
let owner: { email: string; password: string };
let removed: { email: string; password: string };
let backupOutput = '';

function cliEnv(prefix: string, database: string): Record<string, string> {
  const env = integrationEnv();
  return {
    KAFKA_BROKERS: env.kafkaBrokers,
    KAFKA_DRIVER: env.kafkaDriver,
    KAFKA_TOPIC_PREFIX: prefix,
    CLICKHOUSE_URL: env.clickhouseUrl,
    CLICKHOUSE_USER: env.clickhouseUser,
    CLICKHOUSE_PASSWORD: env.clickhousePassword,
    CLICKHOUSE_DATABASE: database,
    LOG_LEVEL: 'warn',
  };
}

async function ingest(argv: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await runIngest(argv, { env, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
  return { code, stdout, stderr };
}

async function rawTopic(gw: GatewayFixture, key: TopicKey): Promise<string[]> {
  const records: ConsumedMessage[] = [];
  await readTopicToEnd(gw.kafka.kafka, { topic: gw.kafka.topic(key), logger: testLogger(), onMessage: (m) => records.push(m) });
  return records.map((m) => JSON.stringify([m.partition, m.key?.toString('base64') ?? null, m.value?.toString('base64') ?? null, m.headers]));
}

const query = async (gw: GatewayFixture, sql: string) => gw.clickhouse.ch.query<Record<string, unknown>>(sql);

beforeAll(async () => {
  source = await createGatewayFixture();
  const created = await source.admin.inject({ method: 'POST', url: '/admin/v1/accounts', headers: admin, payload: { name: 'Drill Ltd', plan: 'free' } });
  expect(created.statusCode).toBe(201);
  accountId = (created.json() as { id: string }).id;
  const key = await source.admin.inject({
    method: 'POST',
    url: `/admin/v1/accounts/${accountId}/keys`,
    headers: admin,
    payload: { name: 'drill', scopes: [...API_KEY_SCOPES] },
  });
  expect(key.statusCode).toBe(201);
  apiKey = (key.json() as { apiKey: string }).apiKey;
  owner = await createOwner(source, accountId);
  removed = await createOwner(source, accountId);
  await source.controlPlane.removeOwner(accountId, removed.email); // a tombstone in control.owners
  const put = await source.admin.inject({
    method: 'PUT',
    url: `/admin/v1/accounts/${accountId}/crm/credentials/main`,
    headers: admin,
    payload: { type: 'hubspot', accessToken: SECRET_TOKEN },
  });
  expect(put.statusCode).toBe(200);
  const mapped = await source.admin.inject({ method: 'PUT', url: `/admin/v1/accounts/${accountId}/crm/mapping?check=skip`, headers: admin, payload: mapping });
  expect(mapped.statusCode).toBe(201);
  // A plan change: a billing ledger record and an audit record.
  const plan = await source.admin.inject({ method: 'PUT', url: `/admin/v1/accounts/${accountId}/plan`, headers: admin, payload: { plan: 'pro' } });
  expect(plan.statusCode).toBe(200);

  // Two monthly partitions of events, and one event inserted twice (the duplicate a redelivery leaves until a merge).
  const march = Date.UTC(2026, 2, 10, 12);
  const april = Date.UTC(2026, 3, 10, 12);
  const events = Array.from({ length: 120 }, (_, i) =>
    storedEvent(accountId, {
      eventId: `evt-drill-${i}`,
      timestampMs: (i % 2 ? march : april) + i * 1000,
      receivedAtMs: april + i * 1000,
      email: `p${i % 7}@example.com`,
    }),
  );
  await storeEvents(source.clickhouse.ch, events);
  await storeEvents(source.clickhouse.ch, events.slice(0, 1));

  // The real processor copies the ledger and the audit log into ClickHouse (what the admin API reads).
  processor = await startProcessorFor(source, 'restore-drill-processor', { ledger: true });
  await waitFor(
    async () => {
      const [row] = await query(source, `SELECT (SELECT count() FROM billing_ledger) AS ledger, (SELECT count() FROM audit_log) AS audit`);
      return Number(row?.ledger) >= 1 && Number(row?.audit) >= 5 ? row : false;
    },
    { description: 'the ledger and audit copies in ClickHouse', timeoutMs: 20_000 },
  );
  for (const part of processor.reverse()) await part.stop();
  processor = [];

  dir = join(await mkdtemp(join(tmpdir(), 'ingest-backup-')), 'backup');
  const backup = await ingest(['backup', '--to', dir], cliEnv(source.kafka.prefix, source.clickhouse.database));
  expect(backup.stderr).toBe('');
  expect(backup.code).toBe(0);
  backupOutput = backup.stdout;
}, 60_000);

afterAll(async () => {
  for (const part of processor.reverse()) await part.stop();
  await restored?.close();
  await source?.close();
  if (dir) await rm(join(dir, '..'), { recursive: true, force: true });
});

describe('ingest backup and ingest restore (the restore drill)', () => {
  it('backs up every control topic, the ledger, the audit log and every table; the secrets stay sealed', async () => {
    for (const topic of [
      'control.accounts',
      'control.apikeys',
      'control.owners',
      'control.admins',
      'control.mappings',
      'control.crm-credentials',
      'billing.ledger',
      'audit.log',
    ])
      expect(backupOutput).toContain(`${topic}:`);
    for (const table of ['events', 'usage_hourly', 'events_daily', 'billing_ledger', 'audit_log', 'schema_migrations'])
      expect(backupOutput).toContain(`  ${table}:`);
    expect(backupOutput).toContain('events: 121 rows in 2 partition(s)');
    const files = await readdir(dir, { recursive: true });
    const everything = Buffer.concat(
      await Promise.all(files.filter((f) => f.endsWith('.gz')).map(async (f) => gunzipSync(await readFile(join(dir, f))))),
    ).toString('latin1');
    expect(everything).toContain(accountId);
    expect(everything, 'the CRM token is in the backup in clear').not.toContain(SECRET_TOKEN);
    expect(everything, "an owner's password is in the backup").not.toContain(owner.password);
  });

  it('restores into an empty prefix and database; a gateway and console there serve the same state', async () => {
    const [kafka, clickhouse] = await Promise.all([createTestKafka(Object.keys(TOPICS) as TopicKey[]), createTestClickHouse()]);
    const groups = { PROCESSOR_LEDGER_GROUP: `drill-ledger-${kafka.prefix}`, PROCESSOR_AUDIT_GROUP: `drill-audit-${kafka.prefix}` };
    const restore = await ingest(['restore', '--from', dir], { ...cliEnv(kafka.prefix, clickhouse.database), ...groups });
    if (restore.code !== 0) {
      await Promise.allSettled([kafka.cleanup(), clickhouse.cleanup()]);
      throw new Error(`restore failed (${restore.code}): ${restore.stderr}`);
    }
    restored = await createGatewayFixture({}, { stores: { kafka, clickhouse } });
    // The processor's copier groups start after the restored records (the tables hold them already).
    for (const [key, group] of [
      ['billingLedger', groups.PROCESSOR_LEDGER_GROUP],
      ['auditLog', groups.PROCESSOR_AUDIT_GROUP],
    ] as const) {
      const ends = (await topicOffsets(kafka.kafka, kafka.topic(key))).map((r) => r.high.toString());
      const committed = await committedOffsets(kafka.kafka, group, kafka.topic(key));
      expect(
        [...committed.entries()].sort(([a], [b]) => a - b).map(([, o]) => o),
        key,
      ).toEqual(ends);
    }

    // Control topics: the same records, tombstones and partitions included.
    for (const key of [
      'controlAccounts',
      'controlApiKeys',
      'controlOwners',
      'controlMappings',
      'controlCrmCredentials',
      'billingLedger',
      'auditLog',
    ] as TopicKey[])
      expect(await rawTopic(restored, key), key).toEqual(await rawTopic(source, key));

    // The owner signs in with their password; the removed owner stays removed.
    expect((await signInRequest(restored.console, owner.email, owner.password)).statusCode).toBe(200);
    expect((await signInRequest(restored.console, removed.email, removed.password)).statusCode).toBe(401);

    // The key authenticates, and an event reads back by id as on the source.
    const read = (gw: GatewayFixture) =>
      gw.app.inject({ method: 'GET', url: '/v1/events/evt-drill-7', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() });
    const [before, after] = [await read(source), await read(restored)];
    expect(after.statusCode, after.body).toBe(200);
    expect(after.json()).toEqual(before.json());

    // Ledger and audit log, through the admin API (ClickHouse copies).
    for (const url of [`/admin/v1/billing/ledger?accountId=${accountId}`, `/admin/v1/audit?accountId=${accountId}&limit=100`]) {
      const [a, b] = [await source.admin.inject({ url, headers: admin }), await restored.admin.inject({ url, headers: admin })];
      expect(b.statusCode, b.body).toBe(200);
      expect(b.json()).toEqual(a.json());
    }
    const ledger = (await restored.admin.inject({ url: `/admin/v1/billing/ledger?accountId=${accountId}`, headers: admin })).json() as { records: unknown[] };
    expect(ledger.records).toEqual([expect.objectContaining({ kind: 'plan_changed', plan: 'pro' })]);

    // Every event, duplicate included; the rollups equal, row for row (the views did not feed them a second time).
    const facts = async (gw: GatewayFixture) => ({
      events: await query(gw, 'SELECT count() AS n, uniqExact(event_id) AS u FROM events'),
      hourly: await query(gw, 'SELECT account_id, hour, uniqExactMerge(events) AS n FROM usage_hourly GROUP BY account_id, hour ORDER BY account_id, hour'),
      daily: await query(
        gw,
        'SELECT day, event_name, uniqExactMerge(events) AS n, uniqExactIfMerge(contacts) AS c FROM events_daily GROUP BY day, event_name ORDER BY day, event_name',
      ),
      rows: await query(gw, 'SELECT (SELECT count() FROM usage_hourly) AS hourly, (SELECT count() FROM events_daily) AS daily'),
    });
    const [sourceFacts, restoredFacts] = [await facts(source), await facts(restored)];
    expect(restoredFacts).toEqual(sourceFacts);
    expect(restoredFacts.events).toEqual([{ n: '121', u: '120' }]);
    // The views are attached again: a new event reaches the rollups.
    await storeEvents(restored.clickhouse.ch, [storedEvent(accountId, { eventId: 'evt-after-restore' })]);
    const [rollup] = await query(restored, `SELECT count() AS n FROM usage_hourly`);
    expect(Number(rollup?.n)).toBeGreaterThan(Number(sourceFacts.rows[0]?.hourly));
  }, 30_000);

  it('restores the tables alone with --only clickhouse, beside topics that hold records (ClickHouse lost, Kafka kept)', async () => {
    const fresh = await createTestClickHouse();
    try {
      const only = await ingest(['restore', '--from', dir, '--only', 'clickhouse'], cliEnv(source.kafka.prefix, fresh.database));
      expect(only.stderr).toBe('');
      expect(only.code).toBe(0);
      expect(only.stdout).toMatch(/^restored: 0 topics, 6 tables/);
      const [row] = await fresh.ch.query<{ n: string; u: string }>('SELECT count() AS n, uniqExact(event_id) AS u FROM events');
      expect(row).toEqual({ n: '121', u: '120' });
    } finally {
      await fresh.cleanup();
    }
  });

  it('refuses to restore into a target that holds data', async () => {
    const again = await ingest(['restore', '--from', dir], cliEnv(source.kafka.prefix, source.clickhouse.database));
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/the target is not empty \(topic .*control\.accounts/);
  });
});

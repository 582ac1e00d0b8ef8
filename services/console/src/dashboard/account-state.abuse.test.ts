/**
 * Real servers: Kafka, Redis, ClickHouse; the gateway's public app and the console's apps, the dashboard
 * reached over a real listening port for the neighbour. Per-account state that one tenant
 * could grow in every gateway and sink: API keys, mapping versions (each document up to
 * 256 KiB) and the dashboard's dead-letter listing, which made two consumer groups per request.
 */
import { createControlPlane } from '@ingest/domain';
import { METRIC_NAMES, toDeadLetterMessage } from '@ingest/platform';
import { sampleValue, testLogger, uniqueSuffix } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AbuseGateway, startAbuseGateway } from '@ingest/testkit/gateway';
import { type DashboardUser, signedInOwner } from '@ingest/testkit/gateway';
import { ADMIN_TOKEN, randomClientIp } from '@ingest/testkit/gateway';
import { withNeighbour } from '@ingest/testkit/gateway';

let abuse: AbuseGateway;

beforeAll(async () => {
  abuse = await startAbuseGateway();
});

afterAll(async () => {
  await abuse?.close();
});

const admin = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) =>
  abuse.gw.admin.inject({
    method,
    url,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    remoteAddress: randomClientIp(),
  });

async function scans(): Promise<number> {
  const text = await abuse.gw.consoleMetrics.metrics();
  return (
    (sampleValue(text, METRIC_NAMES.dashboardDeadLetterScans, { topic: 'events' }) ?? 0) +
    (sampleValue(text, METRIC_NAMES.dashboardDeadLetterScans, { topic: 'crm' }) ?? 0)
  );
}

describe('per-account state', () => {
  it('lists dead letters for 30 concurrent requests with one scan per topic, cached, while a neighbour is unharmed', async () => {
    const { account } = await abuse.gw.newAccount('pro');
    await abuse.gw.producer.send(abuse.gw.kafka.topic('deadLetters'), [
      toDeadLetterMessage('storage', {
        message: {
          topic: abuse.gw.kafka.topic('eventsRaw'),
          partition: 0,
          offset: '1',
          key: Buffer.from(`${account.id}:dl-1`),
          value: Buffer.from(JSON.stringify({ accountId: account.id, eventId: 'dl-1', eventName: 'Broken' })),
          headers: {},
          timestamp: Date.now(),
        },
        code: 'schema_mismatch',
        reason: 'test letter',
      }),
    ]);
    const owner: DashboardUser = await signedInOwner(abuse.gw, account.id);
    const others = await Promise.all(Array.from({ length: 4 }, async () => signedInOwner(abuse.gw, (await abuse.gw.newAccount('pro')).account.id)));
    const before = await scans();
    await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      const lists = await Promise.all(Array.from({ length: 30 }, () => owner.request({ method: 'GET', url: '/dashboard/api/deadletters' })));
      for (const list of lists) {
        expect(list.statusCode, list.body).toBe(200);
        expect(list.json().entries.map((e: { eventId: string }) => e.eventId)).toEqual(['dl-1']);
      }
      expect((await scans()) - before).toBe(2);
      // Within the cache's life: no scan at all.
      for (let i = 0; i < 10; i++) expect((await owner.request({ method: 'GET', url: '/dashboard/api/deadletters' })).statusCode).toBe(200);
      expect((await scans()) - before).toBe(2);
      // Other accounts at once: one scan per topic each, and never more than two running (the rest queue).
      const theirs = await Promise.all(others.flatMap((o) => [1, 2, 3].map(() => o.request({ method: 'GET', url: '/dashboard/api/deadletters' }))));
      for (const list of theirs) expect(list.json().entries).toEqual([]);
      expect((await scans()) - before).toBe(2 + others.length * 2);
    });
  });

  it('caps an account at 25 active API keys (409), and at a total that counts revoked keys', async () => {
    const { account } = await abuse.gw.newAccount('pro');
    // The account's owner creates keys from the dashboard (one exists already: newAccount's).
    const owner = await signedInOwner(abuse.gw, account.id);
    const create = (name: string) =>
      owner.request({ method: 'POST', url: '/dashboard/api/keys', payload: { name }, headers: { 'content-type': 'application/json' } });
    await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      for (let i = 0; i < 24; i++) expect((await create(`k${i}`)).statusCode).toBe(201);
      const dashboardRefused = await create('one too many');
      expect(dashboardRefused.statusCode, dashboardRefused.body).toBe(409);
    });
    const refused = await admin('POST', `/admin/v1/accounts/${account.id}/keys`, { name: 'one too many' });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json()).toMatchObject({ type: '/problems/conflict', detail: expect.stringContaining('25 active API keys') });

    // The total, with limits small enough to reach in a test: create-and-revoke loops stop too.
    const limited = createControlPlane({
      kafka: abuse.gw.kafka.kafka,
      producer: abuse.gw.producer,
      topicPrefix: abuse.gw.kafka.prefix,
      logger: testLogger(),
      instanceId: `limits-${uniqueSuffix()}`,
      apiKeyLimits: { active: 2, total: 4 },
    });
    await limited.start();
    try {
      const other = await limited.createAccount({ name: 'Churn', plan: 'pro' });
      for (let i = 0; i < 4; i++) {
        const { record } = await limited.createApiKey(other.id, `churn-${i}`);
        await limited.revokeApiKey(other.id, record.id);
      }
      await expect(limited.createApiKey(other.id, 'fifth')).rejects.toMatchObject({ code: 'api_key_limit' });
      expect(limited.listApiKeys(other.id)).toHaveLength(4);
    } finally {
      await limited.stop();
    }
  });

  it('holds the newest 10 mapping versions in memory, however many are saved; older ones are not found', async () => {
    const { account } = await abuse.gw.newAccount('pro');
    // A document near the 256 KiB limit: what each version held in every gateway and sink before.
    const rules = Array.from({ length: 100 }, (_, r) => ({
      id: `rule-${r}`,
      when: { eventName: Array.from({ length: 50 }, (_, n) => `Event ${r}-${n} ${'x'.repeat(30)}`) },
      object: 'contact',
      actions: [{ op: 'increment', field: `count_${r}` }],
    }));
    const mapping = { version: 1, crm: { type: 'hubspot', credentialsRef: 'main' }, rules };
    expect(Buffer.byteLength(JSON.stringify(mapping))).toBeGreaterThan(200 * 1024);
    await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      for (let v = 1; v <= 15; v++) {
        const put = await admin('PUT', `/admin/v1/accounts/${account.id}/crm/mapping?check=skip`, mapping);
        expect(put.statusCode, put.body).toBe(201);
      }
    });
    const kept = abuse.gw.controlPlane.mappingVersions(account.id).map((m) => m.version);
    expect(kept).toEqual([6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    const versions = await admin('GET', `/admin/v1/accounts/${account.id}/crm/mapping/versions`);
    expect(versions.json().versions.map((v: { version: number }) => v.version)).toEqual([15, 14, 13, 12, 11, 10, 9, 8, 7, 6]);
    const old = await admin('GET', `/admin/v1/accounts/${account.id}/crm/mapping/versions/2`);
    expect(old.statusCode).toBe(404);
    expect(old.json().detail).toContain('older than the 10 newest versions');
    expect((await admin('GET', `/admin/v1/accounts/${account.id}/crm/mapping/versions/15`)).statusCode).toBe(200);
  });
});

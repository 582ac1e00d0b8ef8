/**
 * Real servers: Kafka, ClickHouse, Redis; the real gateway app (API, dashboard, admin API) and
 * the processor's audit copier in this process. Every admin and owner action that changes state
 * writes one audit record (who, what, when, from where, before/after) to the audit.log topic and,
 * through the copier, to ClickHouse's audit_log; no secret used along the way appears in any record.
 */
import type { AuditPage, AuditRecord } from '@ingest/schemas';
import { type BatchConsumer } from '@ingest/platform';
import { toDeadLetterMessage } from '@ingest/platform';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { ADMIN_TOKEN, type DashboardUser, type GatewayFixture, randomClientIp, signedInOwner, useGatewayFixture } from '@ingest/testkit/gateway';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import { createAuditCopier } from './audit.copier.js';

const gw: GatewayFixture = useGatewayFixture();
let copier: BatchConsumer;
beforeAll(async () => {
  copier = createAuditCopier({
    kafka: gw.kafka.kafka,
    ch: gw.clickhouse.ch,
    topic: gw.kafka.topic('auditLog'),
    groupId: `processor-audit-${uniqueSuffix()}`,
    logger: testLogger(),
  });
  await copier.start();
});
afterAll(async () => {
  await copier?.stop();
});

// Every secret the actions below send or receive: none may reach an audit record.
const secrets = new Set<string>([ADMIN_TOKEN]);
const OWNER_PASSWORD = `owner-password-${uniqueSuffix()}`;
const RESET_PASSWORD = `reset-password-${uniqueSuffix()}`;
const CRM_TOKEN = `pat-na1-AUDITSECRET${uniqueSuffix()}`;
for (const s of [OWNER_PASSWORD, RESET_PASSWORD, CRM_TOKEN]) secrets.add(s);

/** What the test reads of an injected response. */
interface Answer {
  statusCode: number;
  body: string;
  headers: Record<string, string | string[] | number | undefined>;
  json<T = unknown>(): T;
}
interface Done {
  response: Answer;
  ip: string;
}
const admin = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, token = ADMIN_TOKEN): Promise<Done> => {
  const ip = randomClientIp();
  const response = await gw.admin.inject({
    method,
    url: `/admin/v1${url}`,
    headers: { authorization: `Bearer ${token}`, ...(payload ? { 'content-type': 'application/json' } : {}) },
    ...(payload ? { payload } : {}),
    remoteAddress: ip,
  });
  return { response, ip };
};
const json = { 'content-type': 'application/json' };

describe('audit log', () => {
  let accountId = '';
  let operatorToken = '';
  let operatorId = '';
  let owner: DashboardUser;
  const expected: { action: string; actor: string; actorType: 'admin' | 'owner'; done: Done; target?: string }[] = [];

  /** One row per state change: how it is made, and who the record must name. */
  const actions: { action: string; actorType?: 'owner'; actor?: () => string; run: () => Promise<Done>; target?: () => string }[] = [
    {
      action: 'account.create',
      run: async () => {
        const done = await admin('POST', '/accounts', { name: `Audited ${uniqueSuffix()}`, plan: 'free' });
        accountId = done.response.json<{ id: string }>().id;
        return done;
      },
    },
    { action: 'account.plan_set', run: () => admin('PUT', `/accounts/${accountId}/plan`, { plan: 'pro' }) },
    {
      action: 'key.create',
      run: async () => {
        const done = await admin('POST', `/accounts/${accountId}/keys`, { name: 'audited' });
        secrets.add(done.response.json<{ apiKey: string }>().apiKey);
        return done;
      },
    },
    {
      action: 'key.revoke',
      run: async () => {
        const keyId = (await admin('GET', `/accounts/${accountId}/keys`)).response.json<{ keys: { id: string }[] }>().keys[0]?.id ?? '';
        return admin('POST', `/accounts/${accountId}/keys/${keyId}/revoke`);
      },
    },
    { action: 'owner.create', run: () => admin('POST', `/accounts/${accountId}/owners`, { email: 'audited-owner@example.com', password: OWNER_PASSWORD }) },
    {
      action: 'owner.password_reset',
      run: () => admin('POST', `/accounts/${accountId}/owners/audited-owner%40example.com/reset-password`, { password: RESET_PASSWORD }),
    },
    {
      action: 'owner.password_reset',
      target: () => 'audited-owner@example.com',
      run: async () => {
        const done = await admin('POST', `/accounts/${accountId}/owners/audited-owner%40example.com/reset-password`);
        secrets.add(done.response.json<{ password: string }>().password);
        return done;
      },
    },
    { action: 'owner.remove', run: () => admin('DELETE', `/accounts/${accountId}/owners/audited-owner%40example.com`) },
    { action: 'crm_credential.put', run: () => admin('PUT', `/accounts/${accountId}/crm/credentials/hub`, { type: 'hubspot', accessToken: CRM_TOKEN }) },
    {
      action: 'mapping.put',
      run: () =>
        admin('PUT', `/accounts/${accountId}/crm/mapping?check=skip`, {
          version: 1,
          crm: { type: 'hubspot', credentialsRef: 'hub' },
          rules: [{ id: 'r', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'plan', from: { property: 'plan' } }] }],
        }),
    },
    { action: 'mapping.delete', run: () => admin('DELETE', `/accounts/${accountId}/crm/mapping`) },
    { action: 'crm_credential.delete', run: () => admin('DELETE', `/accounts/${accountId}/crm/credentials/hub`) },
    { action: 'account.origins_set', run: () => admin('PUT', `/accounts/${accountId}/allowed-origins`, { origins: ['https://app.example.com'] }) },
    { action: 'account.publishable_ids_set', run: () => admin('PUT', `/accounts/${accountId}/publishable-event-ids`, { mode: 'shared' }) },
    {
      action: 'admin.create',
      run: async () => {
        const done = await admin('POST', '/admins', { name: 'ops-ada', role: 'operator' });
        const body = done.response.json<{ token: string; admin: { id: string } }>();
        operatorToken = body.token;
        operatorId = body.admin.id;
        secrets.add(operatorToken);
        return done;
      },
    },
    { action: 'account.suspend', actor: () => 'ops-ada', run: () => admin('POST', `/accounts/${accountId}/suspend`, { reason: 'audit test' }, operatorToken) },
    { action: 'account.resume', actor: () => 'ops-ada', run: () => admin('POST', `/accounts/${accountId}/resume`, {}, operatorToken) },
    { action: 'admin.revoke', run: () => admin('POST', `/admins/${operatorId}/revoke`) },
    // The dashboard: the signed-in owner is the actor.
    {
      action: 'key.create',
      actorType: 'owner',
      run: async () => {
        owner = await signedInOwner(gw, accountId);
        secrets.add(owner.password);
        const ip = randomClientIp();
        const response = await owner.request({
          method: 'POST',
          url: '/dashboard/api/keys',
          payload: { name: 'from-dashboard' },
          headers: json,
          remoteAddress: ip,
        });
        secrets.add(response.json<{ apiKey: string }>().apiKey);
        return { response, ip };
      },
    },
    {
      action: 'key.revoke',
      actorType: 'owner',
      run: async () => {
        const keyId = (await owner.request({ method: 'GET', url: '/dashboard/api/keys' }))
          .json<{ keys: { id: string; revokedAt: string | null }[] }>()
          .keys.find((k) => k.revokedAt === null)?.id;
        const ip = randomClientIp();
        return { response: await owner.request({ method: 'POST', url: `/dashboard/api/keys/${keyId}/revoke`, remoteAddress: ip }), ip };
      },
    },
    {
      action: 'mapping.put',
      actorType: 'owner',
      run: async () => {
        const ip = randomClientIp();
        const mapping = {
          version: 1,
          crm: { type: 'webhook', credentialsRef: 'hook' },
          rules: [{ id: 'r', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'plan', from: { property: 'plan' } }] }],
        };
        return { response: await owner.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: mapping, headers: json, remoteAddress: ip }), ip };
      },
    },
    {
      action: 'mapping.delete',
      actorType: 'owner',
      run: async () => {
        const ip = randomClientIp();
        return { response: await owner.request({ method: 'DELETE', url: '/dashboard/api/mapping', remoteAddress: ip }), ip };
      },
    },
    {
      action: 'dead_letter.replay',
      actorType: 'owner',
      run: async () => {
        const letter = toDeadLetterMessage('storage', {
          message: {
            topic: gw.kafka.topic('eventsUnique'),
            partition: 0,
            offset: '3',
            key: Buffer.from(`${accountId}:dl-audit`),
            value: Buffer.from(JSON.stringify({ accountId, eventId: 'dl-audit', eventName: 'Signed Up' })),
            headers: {},
            timestamp: Date.now(),
          },
          code: 'schema_mismatch',
          reason: 'for the audit test',
        });
        await gw.producer.send(gw.kafka.topic('deadLetters'), [letter]);
        const position = await waitFor(
          async () => {
            const list = await owner.request({ method: 'GET', url: '/dashboard/api/deadletters?refresh=true' });
            return list.json<{ entries: { eventId: string; position: string }[] }>().entries.find((e) => e.eventId === 'dl-audit')?.position;
          },
          { description: 'the dead letter listed on the dashboard', timeoutMs: 20_000 },
        );
        const ip = randomClientIp();
        return {
          response: await owner.request({
            method: 'POST',
            url: '/dashboard/api/deadletters/replay',
            payload: { topic: 'events', position },
            headers: json,
            remoteAddress: ip,
          }),
          ip,
        };
      },
    },
  ];

  it('records each action with who, what, when and from where, in the topic and in ClickHouse, and never a secret', async () => {
    const startedAt = Date.now();
    for (const row of actions) {
      const done = await row.run();
      expect(done.response.statusCode, `${row.action}: ${done.response.body}`).toBeLessThan(300);
      const actorType = row.actorType ?? 'admin';
      expected.push({
        action: row.action,
        actorType,
        actor: actorType === 'owner' ? owner.email : (row.actor?.() ?? 'admin'),
        done,
        ...(row.target ? { target: row.target() } : {}),
      });
    }
    const byRequest = (records: AuditRecord[]) => new Map(records.map((r) => [r.requestId, r]));
    const check = (records: AuditRecord[]) => {
      const found = byRequest(records);
      for (const e of expected) {
        const record = found.get(e.done.response.headers['x-request-id'] as string);
        expect(record, `no audit record for ${e.action}`).toBeDefined();
        expect(record).toMatchObject({ action: e.action, actor: { type: e.actorType, name: e.actor }, ip: e.done.ip });
        if (e.action !== 'admin.create' && e.action !== 'admin.revoke') expect(record?.accountId).toBe(accountId);
        if (e.target) expect(record?.target).toBe(e.target);
        expect(Date.parse(record?.at ?? '')).toBeGreaterThanOrEqual(startedAt - 1000);
      }
      const text = JSON.stringify(records);
      for (const secret of secrets) expect(text.includes(secret), 'a secret is in the audit log').toBe(false);
    };

    const { values } = await gw.readTopic<AuditRecord>('auditLog', (v) => v.length >= expected.length, `${expected.length} audit records`);
    check(values);
    // What changed, without secrets: the plan's before/after, the credential's non-secret view.
    const records = byRequest(values);
    const of = (action: string) => records.get(expected.find((e) => e.action === action)?.done.response.headers['x-request-id'] as string);
    expect(of('account.plan_set')).toMatchObject({ before: { plan: 'free' }, after: { plan: 'pro' } });
    expect(of('crm_credential.put')?.after).toMatchObject({ name: 'hub', type: 'hubspot' });
    expect(of('account.suspend')).toMatchObject({ actor: { role: 'operator' }, before: { suspension: null }, after: { suspension: { reason: 'audit test' } } });

    // ClickHouse, through the admin API: filters, time range and paging.
    const page = async (query: string, token = ADMIN_TOKEN) => {
      const { response } = await admin('GET', `/audit?${query}`, undefined, token);
      expect(response.statusCode, response.body).toBe(200);
      return response.json<AuditPage>();
    };
    const all = await waitFor(
      async () => {
        const p = await page(`accountId=${accountId}&limit=500`);
        return p.records.length >= expected.filter((e) => e.action !== 'admin.create' && e.action !== 'admin.revoke').length ? p.records : undefined;
      },
      { description: 'the audit records copied to ClickHouse', timeoutMs: 30_000 },
    );
    check([...all, ...(await page('action=admin.create&limit=500')).records, ...(await page('action=admin.revoke&limit=500')).records]);
    expect(all.map((r) => r.at)).toEqual([...all.map((r) => r.at)].sort().reverse());
    expect((await page(`accountId=${accountId}&actor=ops-ada`)).records.map((r) => r.action).sort()).toEqual(['account.resume', 'account.suspend']);
    expect((await page(`accountId=${accountId}&to=${encodeURIComponent(new Date(startedAt - 60_000).toISOString())}`)).records).toEqual([]);
    expect((await page(`accountId=${accountId}&from=${encodeURIComponent(new Date(startedAt - 1000).toISOString())}&limit=500`)).records).toHaveLength(
      all.length,
    );
    const paged: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const p: AuditPage = await page(`accountId=${accountId}&limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(p.records.length).toBeLessThanOrEqual(4);
      paged.push(...p.records.map((r) => r.id));
      cursor = p.nextCursor;
    }
    expect(paged).toEqual(all.map((r) => r.id));
    expect((await admin('GET', '/audit?cursor=not-a-cursor')).response.statusCode).toBe(400);

    // The dashboard shows the account's own (owners') actions only.
    const mine = await owner.request({ method: 'GET', url: '/dashboard/api/audit' });
    expect(mine.statusCode, mine.body).toBe(200);
    const shown = mine.json<AuditPage>().records;
    expect(shown.map((r) => r.action).sort()).toEqual(['dead_letter.replay', 'key.create', 'key.revoke', 'mapping.delete', 'mapping.put']);
    expect(shown.every((r) => r.actor.type === 'owner' && r.accountId === accountId)).toBe(true);
  });

  it('records nothing for a change that changes nothing (a second suspension, a second revocation)', async () => {
    const before = (await gw.readTopic<AuditRecord>('auditLog', (v) => v.length >= expected.length, 'the records so far')).values.length;
    const first = await admin('POST', `/accounts/${accountId}/suspend`, { reason: 'once' });
    const again = await admin('POST', `/accounts/${accountId}/suspend`, { reason: 'twice' });
    expect([first.response.statusCode, again.response.statusCode]).toEqual([200, 200]);
    const { values } = await gw.readTopic<AuditRecord>('auditLog', (v) => v.length >= before + 1, 'the suspension record');
    expect(values.filter((r) => r.requestId === again.response.headers['x-request-id'])).toEqual([]);
    expect(values.filter((r) => r.requestId === first.response.headers['x-request-id'])).toHaveLength(1);
  });
});

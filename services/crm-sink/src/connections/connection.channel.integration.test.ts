/**
 * Real servers: Kafka (the control plane's topics) and Redis (the per-account budget); the fake
 * CRMs over HTTP. The connection channel as main.ts builds it: bearer token, lookup by (account,
 * name) in the control plane, the credential opened with crm-sink's key, one call through the
 * outbound policy with the channel's timeout and answer cap.
 */
import type { ConnectionTestResult, CrmPropertyList } from '@ingest/schemas';
import type { ControlPlane } from '@ingest/domain';
import { testCredentialKeys, testLogger } from '@ingest/testkit';
import { FAKE_CRM_OUTBOUND, FAKE_WEBHOOK_SECRET, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from '../adapters/index.js';
import { createSinkFixture, type SinkFixture } from '../crm-sink.fixture.js';
import { createConnectionChannel } from './connection.channel.js';

const TOKEN = 'tok-channel-good';
const CHANNEL_TOKEN = 'c'.repeat(40);
const TIMEOUT_MS = 1_500;
const MAX_BYTES = 64 * 1024;
let fx: SinkFixture;
let crm: FakeCrm;
let cp: ControlPlane;
const channels: { stop(): Promise<void> }[] = [];

async function channel(checksPerMinute = 60) {
  const c = createConnectionChannel({
    host: '127.0.0.1',
    port: 0,
    tokens: [CHANNEL_TOKEN],
    credentials: cp,
    openCredential: testCredentialKeys().opener,
    redis: fx.redis,
    redisKeyPrefix: fx.redisKeyPrefix,
    checksPerMinute,
    http: {
      outboundPolicy: FAKE_CRM_OUTBOUND,
      headersTimeoutMs: TIMEOUT_MS,
      bodyTimeoutMs: TIMEOUT_MS,
      requestTimeoutMs: TIMEOUT_MS,
      maxResponseBytes: MAX_BYTES,
    },
    logger: testLogger(),
  });
  await c.start();
  channels.push(c);
  return (path: string, body: unknown, token: string | null = CHANNEL_TOKEN) =>
    fetch(`http://127.0.0.1:${c.port}/internal/v1/connections/${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
}

let call: Awaited<ReturnType<typeof channel>>;
let accountA: string;
let accountB: string;

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [TOKEN] });
  fx = await createSinkFixture({ createAdapter: (c) => createAdapter(c, { outboundPolicy: FAKE_CRM_OUTBOUND }), controlPlane: true });
  cp = fx.controlPlane();
  accountA = (await cp.createAccount({ name: 'Channel A', plan: 'pro' })).id;
  accountB = (await cp.createAccount({ name: 'Channel B', plan: 'pro' })).id;
  await cp.putCrmCredential(accountA, 'hs', { type: 'hubspot', accessToken: TOKEN, baseUrl: crm.url });
  await cp.putCrmCredential(accountA, 'hs-bad', { type: 'hubspot', accessToken: 'tok-revoked', baseUrl: crm.url });
  await cp.putCrmCredential(accountA, 'sf', { type: 'salesforce', accessToken: TOKEN, instanceUrl: crm.url });
  await cp.putCrmCredential(accountA, 'hook', { type: 'webhook', url: `${crm.url}/webhook/channel`, secret: FAKE_WEBHOOK_SECRET });
  await cp.putCrmCredential(accountA, 'hook-wrong', {
    type: 'webhook',
    url: `${crm.url}/webhook/channel`,
    secret: 'whsec_d3Jvbmctc2VjcmV0LXdyb25nLXNlY3JldC0zMmJ5dGVz',
  });
  call = await channel();
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(channels.map((c) => c.stop()));
  await fx?.cleanup();
  await crm?.stop();
});

describe('the connection channel', () => {
  it('refuses a request without the token, or with another token, before looking at anything', async () => {
    for (const token of [null, 'd'.repeat(40)]) {
      const res = await call('test', { accountId: accountA, name: 'hs' }, token);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
    }
    expect(crm.calls.filter((c) => c.path.startsWith('/account-info'))).toHaveLength(0);
  });

  it('tests HubSpot: a good token connects, a revoked one is refused in plain words', async () => {
    const good = (await (await call('test', { accountId: accountA, name: 'hs' })).json()) as ConnectionTestResult;
    expect(good).toMatchObject({ v: 1, ok: true, crm: 'hubspot', outcome: 'connected', status: 200, message: 'HubSpot accepted the token (200).' });
    const bad = (await (await call('test', { accountId: accountA, name: 'hs-bad' })).json()) as ConnectionTestResult;
    expect(bad).toMatchObject({ ok: false, outcome: 'refused', status: 401 });
    expect(bad.message).toMatch(/^HubSpot refused the token \(401\): expired or revoked/);
    expect(bad.message).not.toContain('tok-revoked');
  });

  it('tests Salesforce (org limits) and a webhook (a signed test delivery the receiver verifies)', async () => {
    const sf = (await (await call('test', { accountId: accountA, name: 'sf' })).json()) as ConnectionTestResult;
    expect(sf).toMatchObject({ ok: true, crm: 'salesforce', outcome: 'connected' });
    expect(crm.calls.some((c) => c.path === '/services/data/v60.0/limits')).toBe(true);
    const hook = (await (await call('test', { accountId: accountA, name: 'hook' })).json()) as ConnectionTestResult;
    expect(hook).toMatchObject({ ok: true, crm: 'webhook', outcome: 'connected', status: 200 });
    expect(crm.calls.find((c) => c.crm === 'webhook')?.body).toMatchObject({ type: 'connection.test' });
    const wrong = (await (await call('test', { accountId: accountA, name: 'hook-wrong' })).json()) as ConnectionTestResult;
    expect(wrong).toMatchObject({ ok: false, outcome: 'refused', status: 401 });
    expect(wrong.message).toContain('does not verify the signature');
  });

  it("never reaches another account's credential", async () => {
    const res = await call('test', { accountId: accountB, name: 'hs' });
    expect(res.status).toBe(404);
    const props = await call('properties', { accountId: accountB, name: 'hs', object: 'contact' });
    expect(props.status).toBe(404);
  });

  it('reads object properties, normalised (HubSpot properties API, Salesforce describe)', async () => {
    const hs = (await (await call('properties', { accountId: accountA, name: 'hs', object: 'contact' })).json()) as CrmPropertyList;
    expect(hs).toMatchObject({ v: 1, crm: 'hubspot', object: 'contact' });
    expect(hs.properties.find((p) => p.name === 'hs_object_id')).toEqual({ name: 'hs_object_id', label: 'Record ID', type: 'number', readOnly: true });
    expect(hs.properties.find((p) => p.name === 'lifecyclestage')?.options).toEqual([
      { value: 'lead', label: 'Lead' },
      { value: 'customer', label: 'Customer' },
    ]);
    const sf = (await (await call('properties', { accountId: accountA, name: 'sf', object: 'company' })).json()) as CrmPropertyList;
    expect(sf.properties.map((p) => [p.name, p.readOnly])).toEqual([
      ['Id', true],
      ['Name', false],
      ['Ingest_Domain__c', false],
    ]);
    const hook = await call('properties', { accountId: accountA, name: 'hook', object: 'contact' });
    expect(hook.status).toBe(502);
    expect(((await hook.json()) as { detail: string }).detail).toContain('no object properties');
  });

  it('bounds a slow CRM by the timeout and a huge answer by the cap, in plain words', async () => {
    crm.failNext({ crm: 'hubspot', token: TOKEN, delayMs: 10_000 });
    const started = Date.now();
    const slow = (await (await call('test', { accountId: accountA, name: 'hs' })).json()) as ConnectionTestResult;
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS + 2_000);
    expect(slow).toMatchObject({ ok: false, outcome: 'unreachable' });
    expect(slow.message).toMatch(/^HubSpot did not answer in time/);

    crm.failNext({ crm: 'hubspot', token: TOKEN, bodyBytes: 50 * 1024 * 1024 });
    const huge = await call('properties', { accountId: accountA, name: 'hs', object: 'contact' });
    expect(huge.status).toBe(502);
    expect(((await huge.json()) as { detail: string }).detail).toContain(`over ${MAX_BYTES} bytes`);
    crm.clearFaults();
  }, 20_000);

  it('holds each account to its own budget of checks', async () => {
    const limited = await channel(2);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) statuses.push((await limited('test', { accountId: accountB, name: 'nothing' })).status);
    expect(statuses).toEqual([404, 404, 429]);
    // Account A's budget is its own.
    expect((await limited('test', { accountId: accountA, name: 'hs' })).status).toBe(200);
  });
});

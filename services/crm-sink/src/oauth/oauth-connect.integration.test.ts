/**
 * Real servers: Kafka (control plane, events.unique), Redis (sessions, pending authorizations,
 * token sets, the sink's state) and ClickHouse (the gateway fixture's); the real console app and
 * the real crm-sink; a fake HubSpot whose host also serves a fake OAuth authorization server
 * (as api.hubapi.com serves both), issuing 4-second access tokens and rotating refresh tokens.
 *
 * The whole path: an owner connects HubSpot from the dashboard (start, consent, callback), the
 * sink syncs with the connected token, the token runs out and the sink renews it.
 */
import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { createSyncStateStore, createTokenHttp, uniqueEventKey } from '@ingest/domain';
import { type Component, createMetricsRegistry } from '@ingest/platform';
import { testCredentialKeys, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { createGatewayFixture, DASHBOARD_HOST, type GatewayFixture, signedInOwner } from '@ingest/testkit/gateway';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAdapter } from '../adapters/index.js';
import { createCrmSink } from '../crm-sink.js';
import { TEST_PARK } from '../crm-sink.fixture.js';

const KEY_PREFIX = `t${uniqueSuffix()}:`;
const CALLBACK = '/dashboard/api/crm/oauth/callback';
const ACCESS_TTL_MS = 4_000;
const tokenHttp = createTokenHttp({ policy: FAKE_CRM_OUTBOUND, timeoutMs: 5_000 });

let crm: FakeCrm;
let gw: GatewayFixture;
let sink: Component;

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot' },
  rules: [{ id: 'signup', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'plan', from: { property: 'plan' } }] }],
};

function oauthServer() {
  if (!crm.oauth) throw new Error('the fake CRM was started without its OAuth server');
  return crm.oauth;
}

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [], oauth: { accessTtlMs: ACCESS_TTL_MS, rotateRefreshTokens: true } });
  const auth = oauthServer();
  const env = {
    REDIS_KEY_PREFIX: KEY_PREFIX,
    CRM_ALLOW_HTTP: 'true',
    CRM_ALLOWED_CIDRS: '127.0.0.1/32',
    CRM_OAUTH_REDIRECT_URL: `http://${DASHBOARD_HOST}${CALLBACK}`,
    CRM_OAUTH_HUBSPOT_CLIENT_ID: auth.clientId,
    CRM_OAUTH_HUBSPOT_CLIENT_SECRET: auth.clientSecret,
    CRM_OAUTH_HUBSPOT_AUTHORIZE_URL: `${crm.url}/oauth/authorize`,
    CRM_OAUTH_HUBSPOT_API_URL: crm.url,
  };
  gw = await createGatewayFixture(env);
  sink = createCrmSink({
    kafka: gw.kafka.kafka,
    producer: gw.producer,
    redis: gw.redis,
    mappings: gw.controlPlane,
    openCredential: testCredentialKeys().opener,
    createAdapter: (credential, bearer) => createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND, ...(bearer ? { bearer } : {}) }),
    logger: testLogger(),
    metrics: createMetricsRegistry('crm-sink-oauth-e2e'),
    topicPrefix: gw.kafka.prefix,
    groupId: `crm-sink-${uniqueSuffix()}`,
    redisKeyPrefix: KEY_PREFIX,
    ttl: { ledgerSeconds: 3600, recordStateSeconds: 3600, syncStateSeconds: 3600 },
    coalesce: { windowMs: 200, maxRecords: 50 },
    rate: { ratePerSecond: 20, burst: 5 },
    retry: { maxAttempts: 5, budgetMs: 30_000, baseDelayMs: 50, maxDelayMs: 400 },
    maxUnfinishedPerPartition: 500,
    park: TEST_PARK,
    oauth: {
      apps: {
        redirectUrl: env.CRM_OAUTH_REDIRECT_URL,
        apps: {
          hubspot: {
            provider: 'hubspot',
            clientId: auth.clientId,
            clientSecret: auth.clientSecret,
            scopes: 'oauth',
            authorizeUrl: env.CRM_OAUTH_HUBSPOT_AUTHORIZE_URL,
            tokenUrl: `${crm.url}/oauth/v1/token`,
            defaultTokenTtlMs: 1_800_000,
          },
        },
        refreshBeforeMs: 1_000,
        httpTimeoutMs: 5_000,
        hubspotApiUrl: crm.url,
        salesforceLoginUrl: crm.url,
      },
      keyring: testCredentialKeys().keyring,
      send: tokenHttp.send,
      leaseMs: 10_000,
      waitMs: 8_000,
      revokePollMs: 200,
    },
  });
  await sink.start();
});

afterAll(async () => {
  await sink?.stop();
  await gw?.close();
  await tokenHttp.close();
  await crm?.stop();
});

let seq = 0;
async function syncs(accountId: string, plan: string): Promise<void> {
  seq += 1;
  const email = `e2e-${seq}-${uniqueSuffix()}@example.com`;
  const record: EventRecord = {
    v: 1,
    accountId,
    eventId: `evt-${seq}-${uniqueSuffix()}`,
    eventName: 'Signed Up',
    email,
    domain: null,
    timestampMs: Date.now(),
    receivedAtMs: Date.now(),
    properties: { plan },
    source: 'api',
    jobId: null,
  };
  await gw.producer.send(gw.kafka.topic('eventsUnique'), [{ key: uniqueEventKey(record), value: JSON.stringify(record) }]);
  const states = createSyncStateStore({ redis: gw.redis, keyPrefix: KEY_PREFIX });
  const state = await waitFor(
    async () => {
      const s = await states.read(accountId, record.eventId);
      return s.state !== 'pending' && s;
    },
    { description: `the sync state of ${record.eventId}`, timeoutMs: 30_000 },
  );
  expect(state).toMatchObject({ state: 'synced' });
  expect(crm.records('hubspot', 'contacts').get(email)?.properties).toMatchObject({ plan });
}

it('an owner connects HubSpot from the dashboard; the sink syncs with that token, and renews it once it runs out', async () => {
  const auth = oauthServer();
  const { account } = await gw.newAccount('pro');
  const owner = await signedInOwner(gw, account.id);
  const started = await owner.request({ method: 'POST', url: '/dashboard/api/crm/oauth/hubspot/start', payload: {} });
  expect(started.statusCode, started.body).toBe(200);
  const binding = started.cookies.find((c) => c.name === 'ingest_oauth')?.value;
  const consent = await fetch((started.json() as { authorizeUrl: string }).authorizeUrl, { redirect: 'manual' });
  const back = new URL(consent.headers.get('location') ?? '');
  const page = await gw.console.inject({
    method: 'GET',
    url: `${back.pathname}${back.search}`,
    headers: { host: DASHBOARD_HOST, cookie: `ingest_oauth=${binding}` },
  });
  expect(page.statusCode, page.body).toBe(200);
  await gw.controlPlane.putMapping(account.id, mapping, 'cli');
  const connectedAt = Date.now();

  await syncs(account.id, 'free');
  expect(auth.refreshCount()).toBe(0);

  await waitFor(() => Date.now() > connectedAt + ACCESS_TTL_MS, { description: 'the connected access token expired' });
  await syncs(account.id, 'pro');
  expect(auth.refreshCount()).toBeGreaterThanOrEqual(1);
  expect(crm.calls.filter((c) => c.crm === 'hubspot' && c.status !== 200 && c.status !== 207)).toEqual([]);
});

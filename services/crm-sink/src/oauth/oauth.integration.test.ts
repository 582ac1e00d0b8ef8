/**
 * Real servers: Kafka (events, the control plane's credentials) and Redis (token sets, refresh
 * leases, the park); a fake HubSpot and a fake OAuth authorization server over real HTTP, whose
 * access tokens live 4 s and whose refresh tokens rotate on every use (docs/crm-sync.md, "OAuth
 * connections"). The sink is built as main.ts builds it, with the OAuth part switched on.
 */
import { randomBytes } from 'node:crypto';
import type { CrmMapping } from '@ingest/schemas';
import {
  authorizeUrl,
  type ControlPlane,
  type CrmCredential,
  exchangeCode,
  generateCredentialKeyPair,
  type OAuthApps,
  type OAuthRevokeRequest,
  oauthRevokeQueueKey,
  randomUrlToken,
  type TokenSet,
  createTokenHttp,
} from '@ingest/domain';
import { createMetricsRegistry, type Registry } from '@ingest/platform';
import { testCredentialKeys, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { FAKE_CRM_OUTBOUND, type FakeCrm, type FakeOAuthServer, startFakeCrm, startFakeOAuthServer } from '@ingest/testkit/fake-crm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from '../adapters/index.js';
import type { CrmSinkDeps } from '../crm-sink.js';
import { createSinkFixture, type SinkFixture } from '../crm-sink.fixture.js';
import { createOAuthMetrics } from './oauth.metrics.js';
import { createTokenManager } from './token.manager.js';
import { createTokenStateStore } from './token.store.js';

const REDIRECT = 'http://dashboard.test/dashboard/api/crm/oauth/callback';
const ACCESS_TTL_MS = 4_000;

let auth: FakeOAuthServer;
let crm: FakeCrm;
let fx: SinkFixture;
let admin: ControlPlane;
let apps: OAuthApps;
let metrics: Registry;
const tokenHttp = createTokenHttp({ policy: FAKE_CRM_OUTBOUND, timeoutMs: 5_000 });

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot' },
  rules: [{ id: 'signup', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'plan', from: { property: 'plan' } }] }],
};

// The connected app's certificate key pair, for the JWT bearer flow.
const jwtKeys = generateCredentialKeyPair(2048);

/** The value, or a failed test naming what was missing. */
function defined<T>(value: T | undefined | null, what: string): T {
  if (value === undefined || value === null) throw new Error(`${what} is missing`);
  return value;
}

beforeAll(async () => {
  auth = await startFakeOAuthServer({ accessTtlMs: ACCESS_TTL_MS, rotateRefreshTokens: true, jwtKeys: { 'jwt-consumer-key': jwtKeys.publicKeyPem } });
  crm = await startFakeCrm({ tokens: [], acceptToken: (t) => auth.acceptsAccessToken(t) });
  apps = {
    redirectUrl: REDIRECT,
    apps: {
      hubspot: {
        provider: 'hubspot',
        clientId: auth.clientId,
        clientSecret: auth.clientSecret,
        scopes: 'oauth',
        authorizeUrl: `${auth.url}/oauth/authorize`,
        tokenUrl: `${auth.url}/oauth/v1/token`,
        defaultTokenTtlMs: 1_800_000,
      },
    },
    refreshBeforeMs: 1_000,
    httpTimeoutMs: 5_000,
    hubspotApiUrl: auth.url,
    salesforceLoginUrl: auth.url,
  };
  fx = await createSinkFixture({
    createAdapter: (credential, bearer) => createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND, ...(bearer ? { bearer } : {}) }),
    controlPlane: true,
  });
  admin = fx.controlPlane();
  metrics = createMetricsRegistry('crm-sink-oauth-test');
  await fx.startSink(`crm-sink-${uniqueSuffix()}`, { mappings: admin, metrics, oauth: oauthDeps() });
});

afterAll(async () => {
  await fx?.cleanup();
  await tokenHttp.close();
  await crm?.stop();
  await auth?.stop();
});

function oauthDeps(): NonNullable<CrmSinkDeps['oauth']> {
  return { apps, keyring: testCredentialKeys().keyring, send: tokenHttp.send, leaseMs: 10_000, waitMs: 8_000, revokePollMs: 200 };
}

/** The authorization-code flow against the fake server, as the console runs it. */
async function grant(): Promise<TokenSet> {
  const codeVerifier = randomUrlToken();
  const app = defined(apps.apps.hubspot, 'the HubSpot app');
  const answer = await fetch(authorizeUrl(app, { redirectUri: REDIRECT, state: randomUrlToken(), codeVerifier }), { redirect: 'manual' });
  const code = new URL(answer.headers.get('location') ?? '').searchParams.get('code') ?? '';
  return exchangeCode(tokenHttp.send, app, { code, codeVerifier, redirectUri: REDIRECT, nowMs: Date.now() });
}

async function connect(accountId: string): Promise<TokenSet> {
  const tokens = await grant();
  await admin.putCrmCredential(accountId, 'hubspot', {
    type: 'hubspot',
    baseUrl: crm.url,
    accessToken: tokens.accessToken,
    refreshToken: defined(tokens.refreshToken, 'the refresh token'),
    auth: { v: 1, kind: 'oauth', clientId: auth.clientId, connectionId: randomBytes(8).toString('hex'), expiresAt: new Date(tokens.expiresAtMs).toISOString() },
  });
  return tokens;
}

async function newAccount(): Promise<string> {
  const account = await admin.createAccount({ name: `oauth-${uniqueSuffix()}`, plan: 'pro' });
  await connect(account.id);
  await admin.putMapping(account.id, mapping, 'cli');
  return account.id;
}

async function synced(accountId: string, email: string, plan: string) {
  const event = fx.event(accountId, 'Signed Up', email, { plan });
  await fx.produce([event]);
  await fx.settled([event]);
  expect((await fx.states([event]))[0]).toMatchObject({ state: 'synced' });
  expect(
    crm.records('hubspot', 'contacts').get(email.toLowerCase())?.properties,
    JSON.stringify(crm.calls.slice(-3).map((c) => [c.path, c.status])),
  ).toMatchObject({ plan });
  return event;
}

async function sample(name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = await metrics.getSingleMetric(name)?.get();
  return (metric?.values ?? []).filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((sum, v) => sum + v.value, 0);
}

describe('OAuth credentials in crm-sink', () => {
  it('syncs with the connected token and refreshes it before it expires (no 401 on the way)', async () => {
    const accountId = await newAccount();
    await synced(accountId, `first-${accountId}@example.com`, 'free');
    const refreshesBefore = auth.refreshCount();
    // The token is within CRM_OAUTH_REFRESH_BEFORE_SECONDS of its end once this holds.
    const connectedAt = Date.now();
    await waitFor(() => Date.now() > connectedAt + ACCESS_TTL_MS - 900, { description: 'the access token near its expiry' });
    await synced(accountId, `second-${accountId}@example.com`, 'pro');
    expect(auth.refreshCount()).toBeGreaterThan(refreshesBefore);
    expect(await sample('ingest_crm_oauth_refreshes_total', { trigger: 'expiry', outcome: 'refreshed' })).toBeGreaterThanOrEqual(1);
    expect(crm.calls.filter((c) => c.status === 401)).toEqual([]);
  });

  it('refreshes once on a 401 and retries the call', async () => {
    const accountId = await newAccount();
    await synced(accountId, `a-${accountId}@example.com`, 'free');
    const before = { refreshes: auth.refreshCount(), unauthorized: crm.calls.filter((c) => c.status === 401).length };
    auth.expireAccessTokens();
    await synced(accountId, `b-${accountId}@example.com`, 'pro');
    expect(crm.calls.filter((c) => c.status === 401).length).toBe(before.unauthorized + 1);
    expect(auth.refreshCount()).toBe(before.refreshes + 1);
  });

  it('a disconnected grant is revoked at the CRM by the sink, with the refresh token it last stored', async () => {
    const account = await admin.createAccount({ name: `revoke-${uniqueSuffix()}`, plan: 'pro' });
    await connect(account.id);
    const stored = defined(admin.crmCredential(account.id, 'hubspot'), 'the stored credential');
    const activeBefore = auth.activeGrants();
    // What the console queues on disconnect (crm-oauth.routes.ts).
    const request: OAuthRevokeRequest = {
      v: 1,
      accountId: account.id,
      name: 'hubspot',
      provider: 'hubspot',
      connectionId: (stored.credential as { auth: { connectionId: string } }).auth.connectionId,
      sealed: defined(stored.sealed, 'the sealed secrets'),
      // The record's settings: its AAD (v2) binds them.
      credential: stored.credential,
      requestedAtMs: Date.now(),
    };
    await fx.redis.rpush(oauthRevokeQueueKey(fx.redisKeyPrefix), JSON.stringify(request));
    await waitFor(() => auth.activeGrants() === activeBefore - 1, { description: `one grant revoked (active: ${auth.activeGrants()})` });
    expect(await sample('ingest_crm_oauth_revocations_total', { outcome: 'revoked' })).toBeGreaterThanOrEqual(1);
  });

  it('a Salesforce JWT bearer credential gets its access tokens with a signed assertion', async () => {
    const account = await admin.createAccount({ name: `jwt-${uniqueSuffix()}`, plan: 'pro' });
    // As the admin API takes it: no access token, the key instead.
    const body = {
      type: 'salesforce',
      // The org's instance as its token answers name it (the fake login server's own address): a
      // token naming another instance breaks the connection (token.manager.ts, instanceMove).
      instanceUrl: auth.url,
      privateKey: jwtKeys.privateKeyPem,
      auth: { v: 1, kind: 'jwt-bearer', clientId: 'jwt-consumer-key', username: 'integration@acme.example', loginUrl: auth.url },
    };
    const stored = await admin.putCrmCredential(account.id, 'sf', body as unknown as CrmCredential);
    expect(JSON.stringify(stored.credential)).not.toContain('PRIVATE KEY');
    const manager = createTokenManager({
      store: createTokenStateStore({ redis: fx.redis, keyPrefix: fx.redisKeyPrefix }),
      redis: fx.redis,
      keyPrefix: fx.redisKeyPrefix,
      keyring: testCredentialKeys().keyring,
      apps,
      send: tokenHttp.send,
      metrics: createOAuthMetrics(createMetricsRegistry('jwt'), () => 0),
      logger: testLogger(),
      leaseMs: 10_000,
      waitMs: 8_000,
    });
    const bearer = defined(manager.bearerFor(stored, testCredentialKeys().opener(stored)), 'the bearer source');
    const token = await bearer.token();
    expect(auth.acceptsAccessToken(token)).toBe(true);
    expect(auth.calls.at(-1)).toMatchObject({ path: '/services/oauth2/token', grantType: 'urn:ietf:params:oauth:grant-type:jwt-bearer', status: 200 });
    expect(await bearer.token(), 'the token is reused while it is fresh').toBe(token);
  });

  it('two replicas racing to refresh end with one refresh and one valid token, twice in a row (rotated refresh token kept)', async () => {
    const account = await admin.createAccount({ name: `race-${uniqueSuffix()}`, plan: 'pro' });
    await connect(account.id);
    const stored = defined(admin.crmCredential(account.id, 'hubspot'), 'the stored credential');
    const credential = testCredentialKeys().opener(stored);
    const replica = () =>
      defined(
        createTokenManager({
          store: createTokenStateStore({ redis: fx.redis, keyPrefix: fx.redisKeyPrefix }),
          redis: fx.redis,
          keyPrefix: fx.redisKeyPrefix,
          keyring: testCredentialKeys().keyring,
          apps,
          send: tokenHttp.send,
          metrics: createOAuthMetrics(createMetricsRegistry('race'), () => 0),
          logger: testLogger(),
          leaseMs: 10_000,
          waitMs: 8_000,
          pollMs: 20,
        }).bearerFor(stored, credential),
        'the bearer source',
      );
    const [a, b] = [replica(), replica()];
    let stale = await a.token();
    for (const round of [1, 2]) {
      auth.expireAccessTokens();
      const before = auth.refreshCount();
      const tokens = await Promise.all([
        ...Array.from({ length: 5 }, () => a.refreshAfterUnauthorized(stale)),
        ...Array.from({ length: 5 }, () => b.refreshAfterUnauthorized(stale)),
      ]);
      expect(new Set(tokens).size, `round ${round}: one token`).toBe(1);
      expect(auth.refreshCount() - before, `round ${round}: one refresh`).toBe(1);
      stale = defined(tokens[0], 'a token');
      expect(auth.acceptsAccessToken(stale)).toBe(true);
    }
  });

  it('a revoked grant marks the credential broken: its events are parked (not dead-lettered) until the owner connects again', async () => {
    const accountId = await newAccount();
    await synced(accountId, `ok-${accountId}@example.com`, 'free');
    const failedBefore = await sample('ingest_crm_sync_outcomes_total', { state: 'failed' });
    auth.revokeAll();
    const event = fx.event(accountId, 'Signed Up', `parked-${accountId}@example.com`, { plan: 'pro' });
    await fx.produce([event]);
    const meta = `${fx.redisKeyPrefix}crm:park:{parked}:meta:${encodeURIComponent(accountId)}`;
    const reason = await waitFor(
      async () => ((await fx.redis.hget(meta, 'reason')) ?? '').includes('credential_broken') && (await fx.redis.hget(meta, 'reason')),
      {
        description: 'the account parked with reason credential_broken',
      },
    );
    expect(reason).toContain('needs to be connected again');
    expect((await fx.states([event]))[0]).toMatchObject({ state: 'pending' });
    expect(await sample('ingest_crm_sync_outcomes_total', { state: 'failed' })).toBe(failedBefore);
    expect(await sample('ingest_crm_credentials_broken')).toBeGreaterThanOrEqual(1);
    const refreshesWhileBroken = auth.calls.filter((c) => c.grantType === 'refresh_token').length;

    // Held, not retried against the token endpoint: the broken mark is read from Redis.
    const heldAt = Number(await fx.redis.hget(meta, 'heldAt'));
    await waitFor(async () => Number(await fx.redis.hget(meta, 'heldAt')) > heldAt, { description: 'the resumer looked at the account again' });
    expect(auth.calls.filter((c) => c.grantType === 'refresh_token').length).toBe(refreshesWhileBroken);

    await connect(accountId);
    await fx.settled([event]);
    expect((await fx.states([event]))[0]).toMatchObject({ state: 'synced' });
    expect(await sample('ingest_crm_credentials_broken')).toBe(0);
  });
});

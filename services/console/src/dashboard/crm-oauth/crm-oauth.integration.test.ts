/**
 * Real servers: Kafka (the control plane: the stored credential), Redis (sessions, the pending
 * authorizations, the revocation queue) and ClickHouse (the fixture's), through the real console
 * app; a fake OAuth authorization server over real HTTP (HubSpot's and Salesforce's endpoints,
 * single-use codes, PKCE checked). Connecting a CRM from the dashboard, and every way the
 * callback can go wrong storing nothing.
 */
import { decodeOAuthRevokeRequest, oauthRevokeQueueKey } from '@ingest/domain';
import { testCredentialKeys, uniqueSuffix } from '@ingest/testkit';
import { type FakeOAuthServer, startFakeOAuthServer } from '@ingest/testkit/fake-crm';
import {
  createGatewayFixture,
  DASHBOARD_HOST,
  type DashboardUser,
  type GatewayFixture,
  markOAuthConnectionBroken,
  signedInOwner,
} from '@ingest/testkit/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const CALLBACK = '/dashboard/api/crm/oauth/callback';
const KEY_PREFIX = `t${uniqueSuffix()}:`;

let auth: FakeOAuthServer;
let gw: GatewayFixture;

/** The value, or a failed test naming what was missing. */
function defined<T>(value: T | undefined | null, what: string): T {
  if (value === undefined || value === null) throw new Error(`${what} is missing`);
  return value;
}

beforeAll(async () => {
  auth = await startFakeOAuthServer({ accessTtlMs: 60_000 });
  gw = await createGatewayFixture({
    REDIS_KEY_PREFIX: KEY_PREFIX,
    CRM_ALLOW_HTTP: 'true',
    CRM_ALLOWED_CIDRS: '127.0.0.1/32',
    CRM_OAUTH_REDIRECT_URL: `http://${DASHBOARD_HOST}${CALLBACK}`,
    CRM_OAUTH_HUBSPOT_CLIENT_ID: auth.clientId,
    CRM_OAUTH_HUBSPOT_CLIENT_SECRET: auth.clientSecret,
    CRM_OAUTH_HUBSPOT_AUTHORIZE_URL: `${auth.url}/oauth/authorize`,
    CRM_OAUTH_HUBSPOT_API_URL: auth.url,
    CRM_OAUTH_SALESFORCE_CLIENT_ID: auth.clientId,
    CRM_OAUTH_SALESFORCE_CLIENT_SECRET: auth.clientSecret,
    CRM_OAUTH_SALESFORCE_LOGIN_URL: auth.url,
  });
});

afterAll(async () => {
  await gw?.redis.del(oauthRevokeQueueKey(KEY_PREFIX));
  await gw?.close();
  await auth?.stop();
});

async function owner(): Promise<DashboardUser> {
  const { account } = await gw.newAccount('pro');
  return signedInOwner(gw, account.id);
}

async function start(user: DashboardUser, provider = 'hubspot', payload: Record<string, string> = {}) {
  const response = await user.request({ method: 'POST', url: `/dashboard/api/crm/oauth/${provider}/start`, payload });
  expect(response.statusCode, response.body).toBe(200);
  const binding = response.cookies.find((c) => c.name === 'ingest_oauth');
  return { authorizeUrl: new URL((response.json() as { authorizeUrl: string }).authorizeUrl), binding: `ingest_oauth=${binding?.value}`, cookie: binding };
}

/** The owner's browser at the CRM: consent, and the redirect back. */
async function consent(authorizeUrl: URL): Promise<URL> {
  const answer = await fetch(authorizeUrl, { redirect: 'manual' });
  expect(answer.status).toBe(302);
  return new URL(answer.headers.get('location') ?? '');
}

function callback(url: URL, binding?: string) {
  return gw.console.inject({ method: 'GET', url: `${url.pathname}${url.search}`, headers: { host: DASHBOARD_HOST, ...(binding ? { cookie: binding } : {}) } });
}

describe('connecting a CRM with OAuth from the dashboard', () => {
  it('start answers the authorize URL with PKCE S256 and a state, and binds the browser with a Lax cookie on the callback path', async () => {
    const user = await owner();
    const { authorizeUrl, cookie } = await start(user);
    expect(`${authorizeUrl.origin}${authorizeUrl.pathname}`).toBe(`${auth.url}/oauth/authorize`);
    const q = authorizeUrl.searchParams;
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('redirect_uri')).toBe(`http://${DASHBOARD_HOST}${CALLBACK}`);
    expect(q.get('client_id')).toBe(auth.clientId);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: CALLBACK });
    // Without the CSRF token nothing starts.
    const forged = await user.request({ method: 'POST', url: '/dashboard/api/crm/oauth/hubspot/start', payload: {}, headers: { 'x-csrf-token': undefined } });
    expect(forged.statusCode).toBe(403);
  });

  it('the callback exchanges the code, stores the tokens sealed for crm-sink, and a replay of it stores nothing', async () => {
    const user = await owner();
    const { authorizeUrl, binding } = await start(user);
    const back = await consent(authorizeUrl);
    const page = await callback(back, binding);
    expect(page.statusCode, page.body).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.body).toContain('HubSpot is connected');
    const stored = gw.controlPlane.crmCredential(user.accountId, 'hubspot');
    expect(stored?.credential).toMatchObject({
      type: 'hubspot',
      baseUrl: auth.url,
      auth: { v: 1, kind: 'oauth', clientId: auth.clientId, connectedBy: `owner:${user.email}` },
    });
    expect(JSON.stringify(stored?.credential)).not.toMatch(/at-|rt-/);
    const opened = testCredentialKeys().opener(defined(stored, 'the stored credential')) as { accessToken: string; refreshToken?: string };
    expect(auth.acceptsAccessToken(opened.accessToken)).toBe(true);
    expect(opened.refreshToken).toMatch(/^rt-/);

    const listed = await user.request({ method: 'GET', url: '/dashboard/api/crm/oauth/connections' });
    expect(listed.json()).toMatchObject({
      providers: { hubspot: true, salesforce: true },
      connections: [{ name: 'hubspot', kind: 'oauth', health: { state: 'connected' } }],
    });

    const replay = await callback(back, binding);
    expect(replay.statusCode).toBe(400);
    expect(replay.body).toContain('expired or was already used');
    expect(gw.controlPlane.crmCredential(user.accountId, 'hubspot')?.updatedAt).toBe(stored?.updatedAt);
  });

  it('a wrong state, a replayed code, an error from the CRM and a callback in another browser each show a page and store nothing', async () => {
    const user = await owner();
    const nothingStored = () => expect(gw.controlPlane.listCrmCredentials(user.accountId)).toEqual([]);

    const wrongState = await callback(new URL(`http://x${CALLBACK}?state=${'A'.repeat(43)}&code=abc`), 'ingest_oauth=whatever');
    expect(wrongState.statusCode).toBe(400);
    expect(wrongState.body).toContain('expired or was already used');
    nothingStored();

    // A code that was already exchanged (another owner's flow), sent with this flow's state.
    const other = await owner();
    const first = await start(other);
    const usedBack = await consent(first.authorizeUrl);
    expect((await callback(usedBack, first.binding)).statusCode).toBe(200);
    const mine = await start(user);
    const myBack = await consent(mine.authorizeUrl);
    const replayed = new URL(myBack);
    replayed.searchParams.set('code', usedBack.searchParams.get('code') ?? '');
    const replayPage = await callback(replayed, mine.binding);
    expect(replayPage.statusCode).toBe(400);
    expect(replayPage.body).toContain('did not accept the authorization');
    expect(replayPage.body).toContain('invalid_grant');
    nothingStored();

    auth.denyNext();
    const denied = await start(user);
    const deniedBack = await consent(denied.authorizeUrl);
    expect(deniedBack.searchParams.get('error')).toBe('access_denied');
    const deniedPage = await callback(deniedBack, denied.binding);
    expect(deniedPage.statusCode).toBe(400);
    expect(deniedPage.body).toContain('access_denied');
    nothingStored();

    const elsewhere = await start(user);
    const elsewhereBack = await consent(elsewhere.authorizeUrl);
    const noCookie = await callback(elsewhereBack);
    expect(noCookie.statusCode).toBe(400);
    expect(noCookie.body).toContain('another browser');
    // The state was taken: the right browser cannot use it afterwards either.
    expect((await callback(elsewhereBack, elsewhere.binding)).statusCode).toBe(400);
    nothingStored();
  });

  it('a callback after the owner signed out (in another tab) stores nothing and exchanges no code', async () => {
    const user = await owner();
    const { authorizeUrl, binding } = await start(user);
    const back = await consent(authorizeUrl);
    const tokenCalls = auth.calls.length;
    expect((await user.request({ method: 'DELETE', url: '/dashboard/api/session' })).statusCode).toBe(204);
    const page = await callback(back, binding);
    expect(page.statusCode).toBe(400);
    expect(page.body).toContain('has ended (signed out or expired)');
    expect(gw.controlPlane.listCrmCredentials(user.accountId)).toEqual([]);
    expect(
      auth.calls.slice(tokenCalls).map((c) => c.path),
      'token endpoint calls after sign-out',
    ).toEqual([]);
  });

  it('connects Salesforce with the instance URL its token answer names', async () => {
    const user = await owner();
    const { authorizeUrl, binding } = await start(user, 'salesforce', { name: 'sf-main' });
    expect(authorizeUrl.pathname).toBe('/services/oauth2/authorize');
    const page = await callback(await consent(authorizeUrl), binding);
    expect(page.statusCode, page.body).toBe(200);
    expect(gw.controlPlane.crmCredential(user.accountId, 'sf-main')?.credential).toMatchObject({
      type: 'salesforce',
      instanceUrl: auth.url,
      auth: { kind: 'oauth' },
    });
  });

  it('caps the pending authorizations of an account at 20 (each lives 10 minutes): the 21st start is 429', async () => {
    const user = await owner();
    for (let i = 0; i < 20; i++) await start(user);
    const over = await user.request({ method: 'POST', url: '/dashboard/api/crm/oauth/hubspot/start', payload: {} });
    expect(over.statusCode).toBe(429);
    expect(over.json()).toMatchObject({ type: '/problems/rate-limited' });
  });

  it("shows a connection crm-sink marked broken as broken, with the CRM's reason", async () => {
    const user = await owner();
    const { authorizeUrl, binding } = await start(user);
    expect((await callback(await consent(authorizeUrl), binding)).statusCode).toBe(200);
    const stored = gw.controlPlane.crmCredential(user.accountId, 'hubspot');
    const connectionId = (stored?.credential as { auth: { connectionId: string } }).auth.connectionId;
    await markOAuthConnectionBroken(gw.redis, {
      keyPrefix: KEY_PREFIX,
      accountId: user.accountId,
      name: 'hubspot',
      connectionId,
      reason: 'invalid_grant: revoked',
    });
    const listed = await user.request({ method: 'GET', url: '/dashboard/api/crm/oauth/connections' });
    expect(listed.json()).toMatchObject({ connections: [{ name: 'hubspot', health: { state: 'broken', reason: 'invalid_grant: revoked' } }] });
    expect(listed.body).not.toMatch(/at-|rt-/);
  });

  it('disconnect removes the credential and queues its grant for crm-sink to revoke', async () => {
    const user = await owner();
    const { authorizeUrl, binding } = await start(user);
    expect((await callback(await consent(authorizeUrl), binding)).statusCode).toBe(200);
    const removed = await user.request({ method: 'DELETE', url: '/dashboard/api/crm/oauth/connections/hubspot' });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(removed.json()).toEqual({ name: 'hubspot', disconnected: true, revocation: 'queued' });
    expect(gw.controlPlane.crmCredential(user.accountId, 'hubspot')).toBeUndefined();
    const queued = (await gw.redis.lrange(oauthRevokeQueueKey(KEY_PREFIX), 0, -1)).map(decodeOAuthRevokeRequest);
    expect(queued.filter((r) => r?.accountId === user.accountId)).toEqual([expect.objectContaining({ name: 'hubspot', provider: 'hubspot', v: 1 })]);
    expect((await user.request({ method: 'DELETE', url: '/dashboard/api/crm/oauth/connections/hubspot' })).statusCode).toBe(404);
  });
});

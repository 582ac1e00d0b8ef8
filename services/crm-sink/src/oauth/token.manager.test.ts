import { AppError, createMetricsRegistry, type Redis } from '@ingest/platform';
import { credentialAad, type FormRequest, type OAuthApps, type OAuthTokenState, type StoredCrmCredential } from '@ingest/domain';
import { testCredentialKeys, testLogger } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { AccountBlocked } from '../retry/crm-call.retry.js';
import { createOAuthMetrics } from './oauth.metrics.js';
import { createTokenManager, instanceMove } from './token.manager.js';
import { stampOf, type TokenStateStore } from './token.store.js';

// No servers: the token store is in memory, the lease a stub of the two Redis calls it makes,
// the token endpoint a stub answering what each test says. The lifecycle of one credential's token.

const T0 = Date.UTC(2026, 10, 27, 12);
const apps: OAuthApps = {
  redirectUrl: 'https://ingest.example.com/dashboard/api/crm/oauth/callback',
  apps: {
    hubspot: {
      provider: 'hubspot',
      clientId: 'cid',
      clientSecret: 'cs',
      scopes: 'oauth',
      authorizeUrl: 'https://app.hubspot.com/oauth/authorize',
      tokenUrl: 'https://api.hubapi.com/oauth/v1/token',
      defaultTokenTtlMs: 1_800_000,
    },
    salesforce: {
      provider: 'salesforce',
      clientId: 'cid',
      clientSecret: 'cs',
      scopes: 'api refresh_token',
      authorizeUrl: 'https://login.salesforce.com/services/oauth2/authorize',
      tokenUrl: 'https://login.salesforce.com/services/oauth2/token',
      defaultTokenTtlMs: 7_200_000,
    },
  },
  refreshBeforeMs: 300_000,
  httpTimeoutMs: 1_000,
  hubspotApiUrl: 'https://api.hubapi.com',
  salesforceLoginUrl: 'https://login.salesforce.com',
};

function memoryStore(): TokenStateStore & { states: Map<string, { stamp: string; state: OAuthTokenState }> } {
  const states = new Map<string, { stamp: string; state: OAuthTokenState }>();
  return {
    states,
    read: async (accountId, name) => {
      const entry = states.get(`${accountId}/${name}`);
      return { state: entry?.state, stamp: entry?.stamp ?? '' };
    },
    replace: async (accountId, name, expected, next) => {
      if ((states.get(`${accountId}/${name}`)?.stamp ?? '') !== expected) return false;
      states.set(`${accountId}/${name}`, { stamp: stampOf(next), state: next });
      return true;
    },
  };
}

/** tryLease's SET NX and its release script, on a map. */
function leaseRedis(): Redis {
  const keys = new Map<string, string>();
  return {
    set: async (key: string, value: string) => (keys.has(key) ? null : (keys.set(key, value), 'OK')),
    evalsha: async (_sha: string, _n: number, key: string, token: string) => (keys.get(key) === token ? (keys.delete(key), 1) : 0),
  } as unknown as Redis;
}

function tokenEndpoint(...answers: { status: number; body: unknown }[]) {
  const calls: FormRequest[] = [];
  return {
    calls,
    send: async (request: FormRequest) => {
      calls.push(request);
      const answer = answers.shift();
      if (!answer) throw new Error('no more answers');
      return answer;
    },
  };
}

function storedCredential(expiresAtMs: number, auth: Record<string, unknown> = {}): StoredCrmCredential {
  const secrets = { accessToken: 'at-0', refreshToken: 'rt-0' };
  return {
    accountId: 'acc-1',
    name: 'hubspot',
    credential: {
      type: 'hubspot',
      auth: { v: 1, kind: 'oauth', clientId: 'cid', connectionId: '0123456789abcdef', expiresAt: new Date(expiresAtMs).toISOString(), ...auth },
    },
    updatedAt: new Date(T0).toISOString(),
    sealed: testCredentialKeys().sealer.seal(secrets, credentialAad('acc-1', 'hubspot', 'hubspot')),
  } as StoredCrmCredential;
}

function setUp(stored: StoredCrmCredential, endpoint: ReturnType<typeof tokenEndpoint>, store = memoryStore(), clock = { now: T0 }) {
  const manager = createTokenManager({
    store,
    redis: leaseRedis(),
    keyring: testCredentialKeys().keyring,
    apps,
    send: endpoint.send,
    metrics: createOAuthMetrics(createMetricsRegistry('token-manager-test'), () => 0),
    logger: testLogger(),
    leaseMs: 5_000,
    waitMs: 50,
    pollMs: 5,
    now: () => clock.now,
  });
  const source = manager.bearerFor(stored, testCredentialKeys().opener(stored));
  if (!source) throw new Error('an OAuth credential has a bearer source');
  return { manager, source, store, clock };
}

const refreshed = (n: number) => ({ status: 200, body: { access_token: `at-${n}`, refresh_token: `rt-${n}`, expires_in: 1800 } });

/** A Salesforce OAuth credential for the org at `instanceUrl`. */
function storedSalesforce(expiresAtMs: number, instanceUrl: string): StoredCrmCredential {
  const stored = storedCredential(expiresAtMs);
  return {
    ...stored,
    name: 'salesforce',
    credential: { ...(stored.credential as object), type: 'salesforce', instanceUrl },
    sealed: testCredentialKeys().sealer.seal({ accessToken: 'at-0', refreshToken: 'rt-0' }, credentialAad('acc-1', 'salesforce', 'salesforce')),
  } as StoredCrmCredential;
}

describe('token manager: one credential', () => {
  it('uses the connected token while it is fresh, without calling the token endpoint', async () => {
    const endpoint = tokenEndpoint();
    const { source } = setUp(storedCredential(T0 + 1_800_000), endpoint);
    expect(await source.token()).toBe('at-0');
    expect(await source.token()).toBe('at-0');
    expect(endpoint.calls).toEqual([]);
  });

  it('refreshes within CRM_OAUTH_REFRESH_BEFORE_SECONDS of expiry, keeps the rotated refresh token sealed, then reuses the new token', async () => {
    const endpoint = tokenEndpoint(refreshed(1), refreshed(2));
    const { source, store, clock } = setUp(storedCredential(T0 + 200_000), endpoint);
    expect(await source.token()).toBe('at-1');
    expect(endpoint.calls[0]?.form).toMatchObject({ grant_type: 'refresh_token', refresh_token: 'rt-0', client_id: 'cid', client_secret: 'cs' });
    const saved = store.states.get('acc-1/hubspot');
    expect(saved?.state).toMatchObject({ v: 1, generation: 1, connectionId: '0123456789abcdef', expiresAtMs: T0 + 1_800_000 });
    expect(JSON.stringify(saved)).not.toMatch(/at-1|rt-1/);
    expect(await source.token()).toBe('at-1');
    clock.now = T0 + 1_600_000;
    expect(await source.token()).toBe('at-2');
    expect(endpoint.calls[1]?.form).toMatchObject({ refresh_token: 'rt-1' });
  });

  it('keeps using a still valid token when refreshing early fails for a passing reason', async () => {
    const endpoint = tokenEndpoint({ status: 503, body: {} });
    const { source } = setUp(storedCredential(T0 + 200_000), endpoint);
    expect(await source.token()).toBe('at-0');
  });

  it('invalid_grant marks the connection broken: blocked, and every replica reading the store blocks without calling the server', async () => {
    const endpoint = tokenEndpoint({ status: 400, body: { error: 'invalid_grant', error_description: 'revoked' } });
    const first = setUp(storedCredential(T0 + 200_000), endpoint);
    const blocked = await first.source.refreshAfterUnauthorized('at-0').catch((err: unknown) => err);
    expect(blocked).toBeInstanceOf(AccountBlocked);
    expect(blocked).toMatchObject({ why: 'credential_broken' });
    expect(first.store.states.get('acc-1/hubspot')?.state.broken?.reason).toContain('invalid_grant');
    expect(first.manager.brokenCount()).toBe(1);
    const other = setUp(storedCredential(T0 + 200_000), tokenEndpoint(), first.store);
    await expect(other.source.token()).rejects.toMatchObject({ why: 'credential_broken' });
  });

  it('a new connection (another connection id) starts clean after a broken one', async () => {
    const endpoint = tokenEndpoint({ status: 400, body: { error: 'invalid_grant' } });
    const broken = setUp(storedCredential(T0 + 200_000), endpoint);
    await broken.source.refreshAfterUnauthorized('at-0').catch(() => undefined);
    const reconnected = setUp(storedCredential(T0 + 1_800_000, { connectionId: 'fedcba9876543210' }), tokenEndpoint(), broken.store);
    expect(await reconnected.source.token()).toBe('at-0');
  });

  it('a Salesforce refresh naming another instance is not followed: the connection is broken with both origins named', async () => {
    const sf = (instance: string) => ({ status: 200, body: { access_token: 'at-1', refresh_token: 'rt-1', instance_url: instance, issued_at: String(T0) } });
    const same = setUp(storedSalesforce(T0 + 200_000, 'https://acme.my.salesforce.com'), tokenEndpoint(sf('https://acme.my.salesforce.com/')));
    expect(await same.source.token()).toBe('at-1');

    const moved = setUp(storedSalesforce(T0 + 200_000, 'https://na1.salesforce.com'), tokenEndpoint(sf('https://na2.salesforce.com')));
    await expect(moved.source.token()).rejects.toMatchObject({ why: 'credential_broken' });
    const reason = moved.store.states.get('acc-1/salesforce')?.state.broken?.reason;
    expect(reason).toContain('from https://na1.salesforce.com to https://na2.salesforce.com');
    expect(JSON.stringify(moved.store.states.get('acc-1/salesforce'))).not.toContain('at-1');
  });

  it('instanceMove compares origins only', () => {
    expect(instanceMove('https://a.my.salesforce.com', 'https://a.my.salesforce.com/services')).toBeUndefined();
    expect(instanceMove('https://a.my.salesforce.com', undefined)).toBeUndefined();
    expect(instanceMove('https://a.my.salesforce.com', 'https://evil.example')).toContain('to https://evil.example');
  });

  it('invalid_client (a setting) blocks with backoff but does not mark the connection broken', async () => {
    const endpoint = tokenEndpoint({ status: 401, body: { error: 'invalid_client' } });
    const { source, store } = setUp(storedCredential(T0 + 200_000), endpoint);
    await expect(source.refreshAfterUnauthorized('at-0')).rejects.toMatchObject({ why: 'failing' });
    expect(store.states.size).toBe(0);
  });

  it('a credential of another OAuth app than the one configured is blocked with a message naming the setting', async () => {
    const { source } = setUp(storedCredential(T0 + 200_000, { clientId: 'other-app' }), tokenEndpoint());
    await expect(source.refreshAfterUnauthorized('at-0')).rejects.toMatchObject({
      why: 'failing',
      message: expect.stringContaining('CRM_OAUTH_HUBSPOT_CLIENT_ID'),
    });
  });

  it('refuses an auth of a newer release (unknown_version) and gives bare tokens no source', () => {
    const endpoint = tokenEndpoint();
    const { manager } = setUp(storedCredential(T0), endpoint);
    const newer = storedCredential(T0, { v: 2 });
    expect(() => manager.bearerFor(newer, testCredentialKeys().opener(newer))).toThrow(AppError);
    const bare = { ...storedCredential(T0), credential: { type: 'hubspot' } } as StoredCrmCredential;
    expect(manager.bearerFor(bare, { type: 'hubspot', accessToken: 'pat' })).toBeUndefined();
  });
});

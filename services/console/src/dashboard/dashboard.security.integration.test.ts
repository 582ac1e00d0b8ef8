/**
 * Real servers: Kafka (control plane), Redis (sessions, rate limits, key use) and ClickHouse
 * (usage history), through the real gateway app. The dashboard's security model: the account
 * comes from the session only, cookie flags, CSRF (token and Origin), sign-in limits, logout.
 */
import { createJobStatusStore } from '@ingest/domain';
import { createMetricsRegistry } from '@ingest/platform';
import { integrationEnv, testLogger, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureWebBuilt } from '../../web/bundle.js';
import { buildConsoleApp } from '../app.js';
import { loadConsoleConfig } from '../config.js';
import { createGatewayFixture, type GatewayFixture, randomClientIp, ADMIN_TOKEN } from '@ingest/testkit/gateway';
import { createOwner, DASHBOARD_HOST, type DashboardUser, sessionCookieOf, signedInOwner, signInRequest } from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let a: { accountId: string; keyId: string; apiKey: string; user: DashboardUser };
let b: { accountId: string; keyId: string; apiKey: string; user: DashboardUser };

beforeAll(async () => {
  gw = await createGatewayFixture();
  const setUp = async () => {
    const { account, keyId, apiKey } = await gw.newAccount('pro');
    return { accountId: account.id, keyId, apiKey, user: await signedInOwner(gw, account.id) };
  };
  a = await setUp();
  b = await setUp();
});

afterAll(async () => {
  await gw?.close();
});

describe('sign-in', () => {
  it('sets an HttpOnly, SameSite=Strict, Secure session cookie scoped to /dashboard and returns the CSRF token', async () => {
    const { email, password } = await createOwner(gw, a.accountId);
    const response = await signInRequest(gw.console, email, password);
    expect(response.statusCode).toBe(200);
    const cookie = response.cookies.find((c) => c.name === 'ingest_dashboard');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: true, path: '/dashboard' });
    expect(cookie?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(response.json()).toMatchObject({ email, account: { id: a.accountId }, csrfToken: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
  });

  it('answers a wrong password and an unknown email identically', async () => {
    const wrongPassword = await signInRequest(gw.console, a.user.email, 'not-the-password-at-all');
    const unknownEmail = await signInRequest(gw.console, 'nobody-here@example.com', a.user.password);
    expect(wrongPassword.statusCode).toBe(401);
    expect(unknownEmail.statusCode).toBe(401);
    const strip = (r: typeof wrongPassword) => ({ ...r.json(), requestId: undefined });
    expect(strip(wrongPassword)).toEqual(strip(unknownEmail));
    expect(wrongPassword.json().type).toBe('/problems/sign-in-failed');
    expect(wrongPassword.cookies).toHaveLength(0);
  });

  it('refuses a malformed sign-in body with a precise 400', async () => {
    const response = await gw.console.inject({
      method: 'POST',
      url: '/dashboard/api/session',
      headers: { host: DASHBOARD_HOST, origin: `http://${DASHBOARD_HOST}`, 'content-type': 'application/json' },
      payload: { email: a.user.email },
      remoteAddress: randomClientIp(),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json().errors).toEqual([expect.objectContaining({ field: '/password', code: 'required' })]);
  });

  it('limits sign-in attempts per client address (429 after 10 a minute)', async () => {
    const ip = randomClientIp();
    const statuses: number[] = [];
    // A different email each time: the per-email throttle (signin-throttle.integration.test.ts) stays out of the way.
    for (let i = 0; i < 11; i++) statuses.push((await signInRequest(gw.console, `guess-${i}-${ip}@example.com`, `wrong-${i}-password`, ip)).statusCode);
    expect(statuses.slice(0, 10).every((s) => s === 401)).toBe(true);
    expect(statuses[10]).toBe(429);
    // The right password from that address is refused too until the window passes.
    expect((await signInRequest(gw.console, a.user.email, a.user.password, ip)).statusCode).toBe(429);
  });
});

describe('one owner never sees another account', () => {
  it('lists only the keys of the session account', async () => {
    const response = await a.user.request({ method: 'GET', url: '/dashboard/api/keys' });
    expect(response.statusCode).toBe(200);
    const ids = (response.json() as { keys: { id: string; accountId: string }[] }).keys.map((k) => k.id);
    expect(ids).toContain(a.keyId);
    expect(ids).not.toContain(b.keyId);
    expect(JSON.stringify(response.json())).not.toContain(b.accountId);
    expect(JSON.stringify(response.json())).not.toMatch(/"hash"/);
  });

  it("cannot revoke another account's key (404) and that key keeps working", async () => {
    const response = await a.user.request({ method: 'POST', url: `/dashboard/api/keys/${b.keyId}/revoke` });
    expect(response.statusCode).toBe(404);
    const stillValid = await gw.app.inject({
      method: 'GET',
      url: '/v1/usage',
      headers: { authorization: `Bearer ${b.apiKey}` },
      remoteAddress: randomClientIp(),
    });
    expect(stillValid.statusCode).toBe(200);
  });

  it('shows the usage of the session account only, whatever the query says', async () => {
    const response = await a.user.request({ method: 'GET', url: `/dashboard/api/usage?accountId=${b.accountId}` });
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body).toMatchObject({ plan: 'pro', limit: 50_000 });
    expect(body.daily).toHaveLength(90);
    expect(JSON.stringify(body)).not.toContain(b.accountId);
  });

  it('refuses the API without a session (401), also for unknown dashboard API paths', async () => {
    for (const url of ['/dashboard/api/keys', '/dashboard/api/usage', '/dashboard/api/session', '/dashboard/api/nope']) {
      const response = await gw.console.inject({ method: 'GET', url, headers: { host: DASHBOARD_HOST }, remoteAddress: randomClientIp() });
      expect([401, 404]).toContain(response.statusCode);
      expect(response.headers['content-type']).toContain('application/problem+json');
    }
    const forged = await gw.console.inject({
      method: 'GET',
      url: '/dashboard/api/keys',
      headers: { cookie: 'ingest_dashboard=' + 'A'.repeat(43) },
      remoteAddress: randomClientIp(),
    });
    expect(forged.statusCode).toBe(401);
  });
});

describe('CSRF', () => {
  const create = (user: DashboardUser, headers: Record<string, string | undefined>) =>
    user.request({ method: 'POST', url: '/dashboard/api/keys', payload: { name: 'csrf-probe' }, headers: { 'content-type': 'application/json', ...headers } });

  it('refuses a state change without the token, with a wrong token, and from a foreign or missing origin', async () => {
    expect((await create(a.user, { 'x-csrf-token': '' })).statusCode).toBe(403);
    expect((await create(a.user, { 'x-csrf-token': b.user.csrfToken })).statusCode).toBe(403);
    expect((await create(a.user, { origin: 'https://evil.example' })).statusCode).toBe(403);
    expect((await create(a.user, { origin: undefined, referer: 'https://evil.example/page' })).statusCode).toBe(403);
    expect((await create(a.user, { origin: undefined })).statusCode).toBe(403);
    const names = (await a.user.request({ method: 'GET', url: '/dashboard/api/keys' })).json().keys.map((k: { name: string }) => k.name);
    expect(names).not.toContain('csrf-probe');
  });

  it('accepts the same request with the token and this origin (or its Referer)', async () => {
    const created = await create(a.user, {});
    expect(created.statusCode).toBe(201);
    expect(created.json().apiKey).toMatch(/^svc_live_/);
    expect((await create(a.user, { origin: undefined, referer: `http://${DASHBOARD_HOST}/dashboard/keys` })).statusCode).toBe(201);
  });

  it('refuses sign-in from a foreign origin (login CSRF)', async () => {
    const response = await gw.console.inject({
      method: 'POST',
      url: '/dashboard/api/session',
      headers: { host: DASHBOARD_HOST, origin: 'https://evil.example', 'content-type': 'application/json' },
      payload: { email: a.user.email, password: a.user.password },
      remoteAddress: randomClientIp(),
    });
    expect(response.statusCode).toBe(403);
  });
});

describe('jobs', () => {
  const csv = 'event_name,timestamp,email\r\nSigned Up,2026-01-05T10:00:00Z,ada@example.com\r\n';
  const multipart = (boundary: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="e.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}--${boundary}--\r\n`;
  const upload = (user: DashboardUser, headers: Record<string, string | undefined> = {}) =>
    user.request({
      method: 'POST',
      url: '/dashboard/api/jobs/csv',
      headers: { 'content-type': 'multipart/form-data; boundary=XyZ', ...headers },
      payload: multipart('XyZ'),
    });

  it("lists only the session account's jobs, newest first, and hides other accounts' jobs by id", async () => {
    const first = await upload(a.user);
    expect(first.statusCode).toBe(202);
    const second = await upload(a.user);
    const other = await upload(b.user);
    expect([second.statusCode, other.statusCode]).toEqual([202, 202]);

    const listed = (await a.user.request({ method: 'GET', url: '/dashboard/api/jobs' })).json() as {
      jobs: { jobId: string; accountId: string; source: string }[];
    };
    expect(listed.jobs.map((j) => j.jobId)).toEqual([second.json().jobId, first.json().jobId]);
    expect(listed.jobs.every((j) => j.accountId === a.accountId && j.source === 'csv')).toBe(true);

    expect((await a.user.request({ method: 'GET', url: `/dashboard/api/jobs/${first.json().jobId}` })).statusCode).toBe(200);
    const foreign = await a.user.request({ method: 'GET', url: `/dashboard/api/jobs/${other.json().jobId}` });
    expect(foreign.statusCode).toBe(404);
  });

  it('refuses an upload without the CSRF token or from a foreign origin, and a bad header with a precise 400', async () => {
    expect((await upload(a.user, { 'x-csrf-token': undefined })).statusCode).toBe(403);
    expect((await upload(a.user, { origin: 'https://evil.example' })).statusCode).toBe(403);
    const badHeader = await a.user.request({
      method: 'POST',
      url: '/dashboard/api/jobs/csv',
      headers: { 'content-type': 'multipart/form-data; boundary=B' },
      payload: `--B\r\nContent-Disposition: form-data; name="file"; filename="e.csv"\r\n\r\nevent_name,email\r\nX,ada@example.com\r\n--B--\r\n`,
    });
    expect(badHeader.statusCode).toBe(400);
    expect(badHeader.json().errors).toEqual([expect.objectContaining({ column: 'timestamp', code: 'missing_column' })]);
  });
});

describe('API key use', () => {
  it('records when a key was last used', async () => {
    const { account, apiKey, keyId } = await gw.newAccount('pro');
    const user = await signedInOwner(gw, account.id);
    const before = (await user.request({ method: 'GET', url: '/dashboard/api/keys' })).json().keys.find((k: { id: string }) => k.id === keyId);
    expect(before.lastUsedAt).toBeNull();
    const used = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() });
    expect(used.statusCode).toBe(200);
    await waitFor(
      async () => {
        const key = (await user.request({ method: 'GET', url: '/dashboard/api/keys' })).json().keys.find((k: { id: string }) => k.id === keyId);
        return key.lastUsedAt !== null || undefined;
      },
      { description: 'lastUsedAt set', timeoutMs: 5_000 },
    );
  });
});

describe('sign-out', () => {
  it('needs the CSRF token, deletes the session and clears the cookie', async () => {
    const user = await signedInOwner(gw, a.accountId);
    expect((await user.request({ method: 'DELETE', url: '/dashboard/api/session', headers: { 'x-csrf-token': 'wrong' } })).statusCode).toBe(403);
    const out = await user.request({ method: 'DELETE', url: '/dashboard/api/session' });
    expect(out.statusCode).toBe(204);
    expect(out.cookies.find((c) => c.name === 'ingest_dashboard')?.value).toBe('');
    expect((await user.request({ method: 'GET', url: '/dashboard/api/session' })).statusCode).toBe(401);
  });

  it('a new sign-in replaces the old session of the same browser', async () => {
    const user = await signedInOwner(gw, a.accountId);
    const again = await gw.console.inject({
      method: 'POST',
      url: '/dashboard/api/session',
      headers: { host: DASHBOARD_HOST, origin: `http://${DASHBOARD_HOST}`, cookie: user.cookie, 'content-type': 'application/json' },
      payload: { email: user.email, password: user.password },
      remoteAddress: randomClientIp(),
    });
    expect(sessionCookieOf(again)).not.toBe(user.cookie);
    expect((await user.request({ method: 'GET', url: '/dashboard/api/session' })).statusCode).toBe(401);
  });
});

/** A second console app on the fixture's clients, with its own settings. */
async function appWith(settings: Record<string, string>) {
  const env = integrationEnv();
  const config = loadConsoleConfig({
    KAFKA_BROKERS: env.kafkaBrokers,
    KAFKA_DRIVER: env.kafkaDriver,
    REDIS_URL: env.redisUrl,
    CLICKHOUSE_URL: env.clickhouseUrl,
    KAFKA_TOPIC_PREFIX: gw.kafka.prefix,
    ...settings,
  });
  return buildConsoleApp({
    config,
    logger: testLogger(),
    metrics: createMetricsRegistry('dashboard-settings'),
    producer: gw.producer,
    redis: gw.redis,
    controlPlane: gw.controlPlane,
    jobStatus: createJobStatusStore({ redis: gw.redis, producer: gw.producer, progressTopic: gw.kafka.topic('jobProgress') }),
    ch: gw.clickhouse.ch,
  });
}

describe('session expiry', () => {
  it('refuses a session left unused for longer than DASHBOARD_SESSION_IDLE_SECONDS', async () => {
    const app = await appWith({ DASHBOARD_SESSION_IDLE_SECONDS: '1' });
    try {
      const { email, password } = await createOwner(gw, a.accountId);
      const signedIn = await signInRequest(app, email, password);
      const cookie = sessionCookieOf(signedIn);
      const probe = () => app.inject({ method: 'GET', url: '/dashboard/api/session', headers: { cookie }, remoteAddress: randomClientIp() });
      expect((await probe()).statusCode).toBe(200);
      // Polled less often than the idle time, so the polls themselves do not keep it alive.
      await waitFor(async () => (await probe()).statusCode === 401 || undefined, {
        description: 'the idle session refused',
        timeoutMs: 15_000,
        intervalMs: 2_000,
      });
    } finally {
      await app.close();
    }
  });
});

describe('rate limits', () => {
  it("gives the dashboard its own budget: an address over the public API's limit still uses the dashboard, up to the dashboard's limit", async () => {
    // The gateway and the console with the same per-address limit, on the same Redis.
    const gateway = await gw.replica({ RATE_LIMIT_PER_MINUTE: '2' });
    const app = await appWith({ RATE_LIMIT_PER_MINUTE: '2', DASHBOARD_RATE_LIMIT_PER_MINUTE: '4' });
    try {
      const { email, password } = await createOwner(gw, a.accountId);
      const cookie = sessionCookieOf(await signInRequest(app, email, password));
      const ip = randomClientIp();
      const api = () => gateway.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${a.apiKey}` }, remoteAddress: ip });
      const dashboard = () => app.inject({ method: 'GET', url: '/dashboard/api/keys', headers: { cookie }, remoteAddress: ip });
      const apiStatuses = [(await api()).statusCode, (await api()).statusCode, (await api()).statusCode];
      expect(apiStatuses).toEqual([200, 200, 429]);
      const dashboardStatuses: number[] = [];
      for (let i = 0; i < 5; i++) dashboardStatuses.push((await dashboard()).statusCode);
      expect(dashboardStatuses).toEqual([200, 200, 200, 200, 429]);
    } finally {
      await app.close();
    }
  });
});

describe('owners through the admin API', () => {
  it('creates an owner with a generated password shown once, refuses duplicates (409) and unknown accounts (404)', async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' };
    const email = `Admin-Made-${Date.now()}@Example.com`;
    const created = await gw.admin.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${a.accountId}/owners`,
      headers: admin,
      payload: { email },
      remoteAddress: randomClientIp(),
    });
    expect(created.statusCode).toBe(201);
    const body = created.json();
    expect(body.owner).toMatchObject({ accountId: a.accountId, email: email.toLowerCase() });
    expect(body.owner.passwordHash).toBeUndefined();
    expect(body.password).toMatch(/^[A-Za-z0-9_-]{20}$/);
    expect((await signInRequest(gw.console, email, body.password)).statusCode).toBe(200);

    const duplicate = await gw.admin.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${a.accountId}/owners`,
      headers: admin,
      payload: { email },
      remoteAddress: randomClientIp(),
    });
    expect(duplicate.statusCode).toBe(409);
    const unknown = await gw.admin.inject({
      method: 'POST',
      url: '/admin/v1/accounts/acc_nope/owners',
      headers: admin,
      payload: { email: 'x@example.com' },
      remoteAddress: randomClientIp(),
    });
    expect(unknown.statusCode).toBe(404);
    const short = await gw.admin.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${a.accountId}/owners`,
      headers: admin,
      payload: { email: 'y@example.com', password: 'short' },
      remoteAddress: randomClientIp(),
    });
    expect(short.statusCode).toBe(400);
  });
});

describe('web app files', () => {
  it('serves the page with a same-origin CSP and never a file outside the built web app', async () => {
    await ensureWebBuilt();
    const page = await gw.console.inject({ method: 'GET', url: '/dashboard/keys', remoteAddress: randomClientIp() });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<div id="root">');
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['cache-control']).toBe('no-cache');
    const script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(page.body)?.[1] ?? '';
    const asset = await gw.console.inject({ method: 'GET', url: script, remoteAddress: randomClientIp() });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers['cache-control']).toContain('immutable');
    for (const url of ['/dashboard/assets/../../main.js', '/dashboard/assets/..%2f..%2fmain.js', '/dashboard/assets/%2e%2e/%2e%2e/package.json']) {
      const response = await gw.console.inject({ method: 'GET', url, remoteAddress: randomClientIp() });
      expect(response.statusCode, url).not.toBe(200);
      expect(response.statusCode, url).toBeLessThan(500);
    }
  });
});

describe('public API document', () => {
  it('does not list dashboard routes', async () => {
    const doc = (await gw.app.inject({ method: 'GET', url: '/v1/openapi.json', remoteAddress: randomClientIp() })).json() as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/dashboard'))).toEqual([]);
  });
});

/**
 * Real servers: Kafka, ClickHouse, and a Redis server of this test's own (started here and
 * killed with SIGKILL, so the shared one keeps serving every other test). What each feature
 * does while Redis is down, as docs/limits.md decides it:
 *
 * - rate limits (per address and per account): fail open by default (RATE_LIMIT_FAIL_OPEN=true):
 *   requests pass the limiters; with RATE_LIMIT_FAIL_OPEN=false every request is 503;
 * - monthly allowance: fails closed: ingestion (events, bulk, CSV) and usage are 503, nothing
 *   is accepted uncounted;
 * - dashboard sessions and job reads: 503 problem+json.
 *
 * Never a 500, never a hang; and everything works again once Redis is back.
 */
import { type OwnRedis, startOwnRedis, waitFor } from '@ingest/testkit';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOwner, signedInOwner, signInRequest, type DashboardUser } from '@ingest/testkit/gateway';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';

let redis: OwnRedis;
let gw: GatewayFixture;
let failClosed: FastifyInstance;
/** Fails open, with an account ceiling of 1 request (a second, bucket of 1). */
let tinyCeiling: FastifyInstance;
let apiKey: string;
let owner: DashboardUser;
let jobId: string;
let signIn: { email: string; password: string };

beforeAll(async () => {
  redis = await startOwnRedis();
  gw = await createGatewayFixture({ REDIS_URL: redis.url });
  failClosed = await gw.replica({ RATE_LIMIT_FAIL_OPEN: 'false' });
  tinyCeiling = await gw.replica({ ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_PRO: '1', ACCOUNT_RATE_LIMIT_BURST_SECONDS: '1' });
  const created = await gw.newAccount('pro');
  apiKey = created.apiKey;
  owner = await signedInOwner(gw, created.account.id);
  signIn = await createOwner(gw, created.account.id);
  const bulk = await send(gw.app, 'POST', '/v1/events/bulk', { events: [{ eventName: 'Seeded', email: 'a@b.io' }] });
  expect(bulk.statusCode).toBe(202);
  jobId = bulk.json().jobId;
});

afterAll(async () => {
  await gw?.close();
  await redis?.close();
});

function send(app: FastifyInstance, method: 'GET' | 'POST', url: string, payload?: unknown): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: { authorization: `Bearer ${apiKey}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    remoteAddress: randomClientIp(),
  });
}

/** Answers 503 problem+json with Retry-After, quickly. */
async function expectUnavailable(response: Promise<LightMyRequestResponse>, what: string): Promise<void> {
  const started = performance.now();
  const res = await response;
  expect(res.statusCode, `${what}: ${res.body}`).toBe(503);
  expect(res.headers['content-type'], what).toContain('application/problem+json');
  expect(res.json(), what).toMatchObject({ type: '/problems/unavailable', status: 503, requestId: expect.any(String) });
  expect(res.headers['retry-after'], what).toBeDefined();
  // The gateway fails fast while Redis is away: no request waits for a reconnect.
  expect(performance.now() - started, what).toBeLessThan(3_000);
}

describe('Redis down', () => {
  it('fails each feature as decided, with 503 problems and never a 500, and recovers when Redis is back', async () => {
    const event = { events: [{ eventName: 'Redis Down', email: 'a@b.io', eventId: 'rd-1' }] };
    expect((await send(gw.app, 'POST', '/v1/events', event)).statusCode).toBe(202);
    // The account ceiling is live while Redis is up: a second request within the second is refused.
    const ceiling = [await send(tinyCeiling, 'GET', '/v1/events/no-such-event'), await send(tinyCeiling, 'GET', '/v1/events/no-such-event')];
    expect(
      ceiling.map((r) => r.statusCode),
      ceiling.map((r) => r.body).join('\n'),
    ).toContain(429);
    await redis.stop();

    // Rate limit, fail open (default): the request passes the limiter and is answered by its route.
    const read = await send(gw.app, 'GET', '/v1/events/no-such-event');
    expect(read.statusCode, read.body).toBe(404);
    // The account ceiling fails open with it: three requests in a row pass to the route.
    for (let i = 0; i < 3; i++) {
      const passed = await send(tinyCeiling, 'GET', '/v1/events/no-such-event');
      expect(passed.statusCode, `account ceiling, fail open: ${passed.body}`).toBe(404);
    }
    // ... and fail closed: refused before the route.
    await expectUnavailable(send(failClosed, 'GET', '/v1/events/no-such-event'), 'rate limit, fail closed');

    // Allowance: fails closed for every route that counts or shows it.
    await expectUnavailable(send(gw.app, 'POST', '/v1/events', event), 'POST /v1/events');
    await expectUnavailable(send(gw.app, 'POST', '/v1/events/bulk', event), 'POST /v1/events/bulk');
    await expectUnavailable(send(gw.app, 'GET', '/v1/usage'), 'GET /v1/usage');

    // Job reads and dashboard sessions.
    await expectUnavailable(send(gw.app, 'GET', `/v1/jobs/${jobId}`), 'GET /v1/jobs/{jobId}');
    await expectUnavailable(owner.request({ method: 'GET', url: '/dashboard/api/session' }), 'dashboard session');
    await expectUnavailable(owner.request({ method: 'GET', url: '/dashboard/api/jobs' }), 'dashboard jobs');

    // Sign-in fails closed before the password is checked: a right and a wrong password get the
    // same answer (503, the same body but for its requestId) in about the same time (no scrypt).
    const timed = async (password: string) => {
      const started = performance.now();
      const response = signInRequest(gw.console, signIn.email, password, randomClientIp());
      await expectUnavailable(response, `sign-in with the ${password === signIn.password ? 'right' : 'wrong'} password`);
      return { body: { ...(await response).json(), requestId: undefined }, ms: performance.now() - started };
    };
    const right = await timed(signIn.password);
    const wrong = await timed('a-wrong-password-123');
    expect(right.body).toEqual(wrong.body);
    expect(Math.abs(right.ms - wrong.ms), `right ${right.ms} ms, wrong ${wrong.ms} ms`).toBeLessThan(250);

    await redis.start();
    await waitFor(async () => (await send(gw.app, 'POST', '/v1/events', { events: [{ eventName: 'Back', email: 'a@b.io' }] })).statusCode === 202, {
      description: 'events accepted again once Redis is back',
      timeoutMs: 30_000,
    });
    // The restarted Redis is empty (no persistence): the session is gone, which is a 401, not a 503.
    expect((await owner.request({ method: 'GET', url: '/dashboard/api/jobs' })).statusCode).toBe(401);
  });
});

/**
 * Real servers: Redis (and Kafka, ClickHouse under the gateway fixture). The health records are
 * written with the domain's store, as the crm-sink writes them; the owner reads them through the
 * real sign-in and session guard.
 */
import { createSyncHealthStore, SYNC_HEALTH_HISTORY_HOURS } from '@ingest/domain';
import { uniqueSuffix } from '@ingest/testkit';
import { createGatewayFixture, DASHBOARD_HOST, type DashboardUser, type GatewayFixture, signedInOwner } from '@ingest/testkit/gateway';
import type { DashboardSyncHealth } from '@ingest/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const keyPrefix = `t${uniqueSuffix()}:`;
let gw: GatewayFixture;
let a: DashboardUser;
let b: DashboardUser;
let fresh: DashboardUser;

beforeAll(async () => {
  gw = await createGatewayFixture({ REDIS_KEY_PREFIX: keyPrefix });
  a = await signedInOwner(gw, (await gw.newAccount('pro')).account.id);
  b = await signedInOwner(gw, (await gw.newAccount('pro')).account.id);
  fresh = await signedInOwner(gw, (await gw.newAccount('pro')).account.id);
});

afterAll(async () => {
  const keys = await gw?.redis.keys(`${keyPrefix}*`);
  if (keys && keys.length > 0) await gw.redis.del(...keys);
  await gw?.close();
});

const read = async (user: DashboardUser) => {
  const response = await user.request({ method: 'GET', url: '/dashboard/api/sync-health' });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<DashboardSyncHealth>();
};

describe('GET /dashboard/api/sync-health', () => {
  it("shows the owner's own account only: its state in full, last 24 h totals and every hour of the week", async () => {
    const store = createSyncHealthStore({ redis: gw.redis, keyPrefix });
    const now = Date.now();
    await store.count(a.accountId, { synced: 7, skipped: 2 }, now - 2 * 3_600_000);
    await store.count(a.accountId, { failed: 3 }, now);
    await store.count(a.accountId, { failed: 50 }, now - 30 * 3_600_000);
    await store.change(a.accountId, { state: 'running', success: true }, now - 60_000);
    await store.change(a.accountId, { state: 'failing', reason: 'events failed: hubspot answered 400: Property "x" does not exist', failure: true }, now);
    await store.count(b.accountId, { synced: 1000 }, now);
    await store.change(b.accountId, { state: 'parked', reason: 'the CRM does not answer' }, now);

    const body = await read(a);
    expect(body.current).toEqual({
      state: 'failing',
      reason: 'events failed: hubspot answered 400: Property "x" does not exist',
      since: new Date(now).toISOString(),
      unhealthySince: new Date(now).toISOString(),
      updatedAt: new Date(now).toISOString(),
      lastSuccessAt: new Date(now - 60_000).toISOString(),
      lastFailureAt: new Date(now).toISOString(),
    });
    expect(body.last24h).toEqual({ synced: 7, skipped: 2, failed: 3 });
    expect(body.hours).toHaveLength(SYNC_HEALTH_HISTORY_HOURS);
    expect(body.hours.reduce((sum, h) => sum + h.failed, 0)).toBe(53);
    expect(body.hours.at(-1)).toMatchObject({ failed: 3 });

    const other = await read(b);
    expect(other.current?.state).toBe('parked');
    expect(other.last24h).toEqual({ synced: 1000, skipped: 0, failed: 0 });
  });

  it('answers an account the sink never saw with no state and zero counts', async () => {
    const body = await read(fresh);
    expect(body.current).toBeNull();
    expect(body.last24h).toEqual({ synced: 0, skipped: 0, failed: 0 });
    expect(body.hours.every((h) => h.synced + h.skipped + h.failed === 0)).toBe(true);
  });

  it('refuses a request without a session (401 problem), and takes no account from the query', async () => {
    const anonymous = await gw.console.inject({ method: 'GET', url: '/dashboard/api/sync-health', headers: { host: DASHBOARD_HOST } });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['content-type']).toContain('application/problem+json');
    const response = await a.request({ method: 'GET', url: `/dashboard/api/sync-health?accountId=${b.accountId}` });
    expect(response.json<DashboardSyncHealth>().current?.state).toBe('failing');
  });
});

/**
 * Real servers: ClickHouse (18.16 locally), Kafka and Redis. The console reads ClickHouse as the
 * read-only user `npm start`, compose and the manifests give it (`ingest_reader`, readonly = 1;
 * the gateway fixture connects its apps so). Regression: the gateway's read-back, the dashboard's Usage page and
 * its Event debugger sent `SETTINGS max_execution_time = …` with their SQL, which readonly = 1
 * refuses ("Cannot execute SET query in readonly mode", code 164), so on the stack `npm start`
 * prints `GET /v1/events/{id}` answered 503 for an event just answered 202, and both pages showed
 * "A dependency is temporarily unavailable". Every ClickHouse read of the console is made here (the gateway's in its own copy).
 */
import { storedEvent, storeEvents } from '@ingest/testkit';
import { ADMIN_TOKEN, createGatewayFixture, type GatewayFixture, signedInOwner } from '@ingest/testkit/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let gw: GatewayFixture;
let accountId: string;

beforeAll(async () => {
  gw = await createGatewayFixture();
  ({
    account: { id: accountId },
  } = await gw.newAccount('pro'));
  await storeEvents(gw.clickhouse.ch, [storedEvent(accountId, { eventId: 'evt-readonly-1' })]);
});

afterAll(async () => {
  await gw?.close();
});

/** status and body together, so a failure shows the problem document the console answered. */
const seen = (res: { statusCode: number; body: string }) => `${res.statusCode} ${res.body}`;

describe('the console reads as the read-only ClickHouse user (readonly = 1)', () => {
  it('is that user (readonly = 1)', async () => {
    expect(await gw.gatewayClickHouse.query("SELECT value FROM system.settings WHERE name = 'readonly'")).toEqual([{ value: '1' }]);
  });

  it("the dashboard's Usage page reads its daily history: GET /dashboard/api/usage answers 200", async () => {
    const owner = await signedInOwner(gw, accountId);
    const res = await owner.request({ method: 'GET', url: '/dashboard/api/usage' });
    expect(seen(res)).toMatch(/^200 /);
    const daily = (res.json() as { daily: { day: string; events: number }[] }).daily;
    expect(
      daily.reduce((sum, d) => sum + d.events, 0),
      JSON.stringify(daily.slice(-2)),
    ).toBe(1);
  });

  it("the dashboard's Event debugger lists and opens the event: GET /dashboard/api/events and /events/{id} answer 200", async () => {
    const owner = await signedInOwner(gw, accountId);
    const list = await owner.request({ method: 'GET', url: '/dashboard/api/events?name=Signed&identity=ada' });
    expect(seen(list)).toMatch(/^200 /);
    expect((list.json() as { events: { eventId: string }[] }).events.map((e) => e.eventId)).toEqual(['evt-readonly-1']);
    const one = await owner.request({ method: 'GET', url: '/dashboard/api/events/evt-readonly-1' });
    expect(seen(one)).toMatch(/^200 /);
    expect(one.json()).toMatchObject({ eventId: 'evt-readonly-1' });
  });

  it("the dashboard's Activity page and the admin API's audit log and billing ledger answer 200", async () => {
    const owner = await signedInOwner(gw, accountId);
    const activity = await owner.request({ method: 'GET', url: '/dashboard/api/audit' });
    expect(seen(activity)).toMatch(/^200 /);
    const headers = { authorization: `Bearer ${ADMIN_TOKEN}` };
    for (const url of [`/admin/v1/audit?accountId=${accountId}`, `/admin/v1/billing/ledger?accountId=${accountId}`]) {
      const res = await gw.admin.inject({ method: 'GET', url, headers, remoteAddress: '127.0.0.1' });
      expect(seen(res), url).toMatch(/^200 /);
    }
  });
});

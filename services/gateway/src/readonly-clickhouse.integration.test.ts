/**
 * Real servers: ClickHouse (18.16 locally), Kafka and Redis. The gateway reads ClickHouse as the
 * read-only user `npm start`, compose and the manifests give it (`ingest_reader`, readonly = 1;
 * the gateway fixture connects it so). Regression: the read-back sent `SETTINGS
 * max_execution_time = …` with its SQL, which readonly = 1 refuses ("Cannot execute SET query in
 * readonly mode", code 164), so on the stack `npm start` prints `GET /v1/events/{id}` answered
 * 503 for an event just answered 202. Every ClickHouse read of the gateway is made here; the
 * console's (the dashboard's pages, the admin API's audit log and ledger) in its own copy,
 * services/console/src/readonly-clickhouse.integration.test.ts.
 */
import { storedEvent, storeEvents } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let gw: GatewayFixture;
let apiKey: string;
let accountId: string;

beforeAll(async () => {
  gw = await createGatewayFixture();
  ({
    apiKey,
    account: { id: accountId },
  } = await gw.newAccount('pro'));
  await storeEvents(gw.clickhouse.ch, [storedEvent(accountId, { eventId: 'evt-readonly-1' })]);
});

afterAll(async () => {
  await gw?.close();
});

/** status and body together, so a failure shows the problem document the gateway answered. */
const seen = (res: { statusCode: number; body: string }) => `${res.statusCode} ${res.body}`;

describe('the gateway reads as the read-only ClickHouse user (readonly = 1)', () => {
  it('is that user (readonly = 1)', async () => {
    expect(await gw.gatewayClickHouse.query("SELECT value FROM system.settings WHERE name = 'readonly'")).toEqual([{ value: '1' }]);
  });

  it('GET /v1/events/{id} answers 200, not 503 "Cannot execute SET query in readonly mode"', async () => {
    const res = await gw.app.inject({
      method: 'GET',
      url: '/v1/events/evt-readonly-1',
      headers: { authorization: `Bearer ${apiKey}` },
      remoteAddress: randomClientIp(),
    });
    expect(seen(res)).toMatch(/^200 /);
    expect(res.json()).toMatchObject({ eventId: 'evt-readonly-1', eventName: 'Signed Up', email: 'ada@example.com', properties: { plan: 'pro' } });
  });
});

/**
 * Real servers: Kafka (stopped and started by this test), Redis, ClickHouse. Guarantee 3 of
 * docs/architecture.md, guarantee 3: with Kafka down the gateway answers 503 (nothing accepted, allowance given back)
 * instead of buffering without bound, and it recovers by itself once Kafka is back.
 */
import type { EventRecord } from '@ingest/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { ensureKafkaUp, startKafka, stopKafka, waitFor } from '@ingest/testkit';

let gw: GatewayFixture;

beforeAll(async () => {
  gw = await createGatewayFixture({ KAFKA_SEND_TIMEOUT_MS: '3000' });
});

afterAll(async () => {
  await ensureKafkaUp(); // whatever happened, leave the broker running
  await gw?.close();
});

describe('Kafka outage', () => {
  it('answers 503 while Kafka is down, gives the allowance back, and recovers alone', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const send = (eventId: string) =>
      gw.app.inject({
        method: 'POST',
        url: '/v1/events',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        payload: { events: [{ eventName: 'Outage', email: 'a@b.io', eventId }] },
        remoteAddress: randomClientIp(),
      });
    const usage = async () =>
      (await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() })).json().used;

    expect((await send('before')).statusCode).toBe(202);
    await stopKafka();

    const started = Date.now();
    const during = await send('during');
    console.log(`503 answered after ${Date.now() - started} ms with Kafka down`);
    expect(during.statusCode).toBe(503);
    expect(during.headers['retry-after']).toBeDefined();
    expect(during.json()).toMatchObject({ type: '/problems/unavailable', status: 503 });
    expect(await usage()).toBe(1);

    await startKafka();
    // No restart of the gateway: its producer reconnects by itself.
    await waitFor(async () => (await send('after')).statusCode === 202 || undefined, {
      description: 'a 202 after Kafka is back',
      timeoutMs: 90_000,
      intervalMs: 1_000,
    });
    expect(await usage()).toBe(2);

    // Both, whichever partition each is on: the reader hands partitions over in any order.
    const { values } = await gw.readTopic<EventRecord>(
      'eventsRaw',
      (v) => ['before', 'after'].every((id) => v.some((r) => r.eventId === id)),
      'the events sent before and after the outage in events.raw',
    );
    // The 503 wrote nothing ('after' may be there more than once: retried until a 202).
    expect([...new Set(values.map((r) => r.eventId))].sort()).toEqual(['after', 'before']);
  });
});

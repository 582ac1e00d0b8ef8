/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture, listening on a real port) and the
 * real processor in this process (dedupe, storage). The real SDKs from npm, unchanged but for
 * where they send: `@segment/analytics-node` and `@rudderstack/rudder-sdk-node` (gzip on, its
 * default). Issue 29, items 1, 5 and 6: every message is stored once (also when the SDK retries
 * a batch whose answer was lost), counted once in the usage and readable by its messageId; a
 * message over 32 KB is refused alone and is in the dead letters with its reason.
 */
import { Analytics } from '@segment/analytics-node';
import RudderAnalytics from '@rudderstack/rudder-sdk-node';
import { sql } from '@ingest/platform';
import { waitFor } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import type { Component } from '@ingest/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerLosingProducer } from './lost-answer.fixture.js';

/** The next events.raw write holding the given text is written, then reported lost (504): the SDK retries. */
const lossy = answerLosingProducer();

let gw: GatewayFixture;
let parts: Component[] = [];
let baseUrl: string;

beforeAll(async () => {
  gw = await createGatewayFixture({}, { producer: lossy.wrap });
  parts = await startProcessorFor(gw, 'segment-sdks');
  // The SDKs need a socket; the per-address limit sees 127.0.0.1 for all of them (a few requests).
  baseUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
}, 60_000);

afterAll(async () => {
  for (const part of [...parts].reverse()) await part.stop();
  await gw?.close();
});

async function storedRows(accountId: string, expected: number) {
  return waitFor(
    async () => {
      const rows = await gw.clickhouse.ch.query<{ event_id: string; event_name: string; email: string }>(
        sql`SELECT event_id, event_name, email FROM events FINAL WHERE account_id = ${accountId} ORDER BY event_id`,
      );
      if (rows.length < expected) throw new Error(`stored so far: ${JSON.stringify(rows)}`);
      return rows;
    },
    { description: `${expected} stored events of ${accountId}`, timeoutMs: 30_000 },
  );
}

const get = (apiKey: string, url: string) =>
  gw.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() });

describe('Segment and RudderStack server SDKs against the gateway', () => {
  it('@segment/analytics-node: every message stored once through a lost answer and its retry, counted once, readable by messageId', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const analytics = new Analytics({ writeKey: apiKey, host: baseUrl, flushAt: 20, flushInterval: 50, maxRetries: 3 });
    const failures: unknown[] = [];
    analytics.on('error', (err) => failures.push(err));
    lossy.loseNextAnswerTo('seg-track-0');
    analytics.identify({ userId: 'user-1', traits: { email: 'Ada@Acme.io', plan: 'pro' }, messageId: 'seg-identify-1' });
    // seg-track-3 also names the browser it came from (anonymousId), as a track after an identify does.
    for (let i = 0; i < 5; i++) {
      analytics.track({
        userId: 'user-1',
        ...(i === 3 ? { anonymousId: 'anon-3' } : {}),
        event: 'Report Built',
        properties: { i },
        messageId: `seg-track-${i}`,
      });
    }
    analytics.track({ anonymousId: 'anon-9', event: 'Pricing Viewed', messageId: 'seg-anon-1' });
    analytics.group({ userId: 'user-1', groupId: 'g-1', traits: { website: 'https://www.acme.io' }, messageId: 'seg-group-1' });
    analytics.page({ anonymousId: 'anon-9', name: 'Pricing', messageId: 'seg-page-1' });
    await analytics.closeAndFlush({ timeout: 20_000 });
    expect(failures).toEqual([]);
    expect(lossy.lost).toBeGreaterThan(0);

    const rows = await storedRows(account.id, 9);
    expect(rows.map((r) => r.event_id)).toEqual(['seg-anon-1', 'seg-group-1', 'seg-identify-1', 'seg-page-1', ...[0, 1, 2, 3, 4].map((i) => `seg-track-${i}`)]);
    expect(rows.find((r) => r.event_id === 'seg-identify-1')).toMatchObject({ event_name: '$identify', email: 'ada@acme.io' });

    const usage = await get(apiKey, '/v1/usage');
    expect(usage.json().used, usage.body).toBe(9);
    const read = await get(apiKey, '/v1/events/seg-track-3');
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json()).toMatchObject({ eventId: 'seg-track-3', eventName: 'Report Built', properties: { i: 3 } });
    // The person and the context the SDK sent, stored in ClickHouse (18.16 here) and read back.
    expect(read.json()).toMatchObject({
      userId: 'user-1',
      anonymousId: 'anon-3',
      context: { library: { name: '@segment/analytics-node', version: expect.stringMatching(/^\d+\.\d+/) } },
    });
    const anonymous = (await get(apiKey, '/v1/events/seg-anon-1')).json();
    expect(anonymous).toMatchObject({ anonymousId: 'anon-9', context: { library: { name: '@segment/analytics-node' } } });
    expect(anonymous).not.toHaveProperty('userId');

    // The SDK's retry wrote its batch twice to events.raw; dedupe passed one copy on.
    const { values, keys } = await gw.readTopic<{ eventId: string; accountId: string; userId?: string }>(
      'eventsUnique',
      (v) => v.filter((r) => r.accountId === account.id).length >= 9,
      'the account\u2019s unique events',
    );
    const unique = values.filter((r) => r.accountId === account.id);
    expect(unique.filter((r) => r.eventId === 'seg-track-0')).toHaveLength(1);
    expect(unique.find((r) => r.eventId === 'seg-track-0')).toMatchObject({ userId: 'user-1' });
    // events.unique is keyed by the sender's person: u:<userId>, else a:<anonymousId>, even when the
    // message has an email (the identify and the tracks of user-1 share a partition, in order).
    const keyOf = (eventId: string) => keys[values.findIndex((r) => r.accountId === account.id && r.eventId === eventId)];
    expect(keyOf('seg-identify-1')).toBe(`${account.id}:u:user-1`);
    expect(keyOf('seg-track-0')).toBe(`${account.id}:u:user-1`);
    expect(keyOf('seg-anon-1')).toBe(`${account.id}:a:anon-9`);
    expect(keyOf('seg-group-1')).toBe(`${account.id}:u:user-1`);
  }, 60_000);

  it('@rudderstack/rudder-sdk-node (gzip): stored once, counted, readable; a message over 32 KB is dead-lettered while the rest of its batch is stored', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    // Its typings omit messageId, which it sends when given (and generates otherwise).
    type Call = Parameters<RudderAnalytics['track']>[0];
    const rudder = new RudderAnalytics(apiKey, { dataPlaneUrl: baseUrl, flushAt: 20, flushInterval: 50, retryCount: 3, logLevel: 'error' });
    const errors: unknown[] = [];
    const sent = (err?: unknown) => {
      if (err) errors.push(err);
    };
    const lostBefore = lossy.lost;
    lossy.loseNextAnswerTo('rs-track-1');
    rudder.identify({ userId: 'r-1', traits: { email: 'grace@navy.mil' }, messageId: 'rs-identify-1' } as Parameters<RudderAnalytics['identify']>[0], sent);
    for (let i = 0; i < 3; i++) rudder.track({ userId: 'r-1', event: 'Ship Launched', properties: { i }, messageId: `rs-track-${i}` } as Call, sent);
    rudder.track({ userId: 'r-1', event: 'Too Big', properties: { blob: 'x'.repeat(40_000) }, messageId: 'rs-too-big' } as Call, sent);
    await rudder.flush();
    expect(errors).toEqual([]);
    expect(lossy.lost).toBe(lostBefore + 1);

    const rows = await storedRows(account.id, 4);
    expect(rows.map((r) => r.event_id)).toEqual(['rs-identify-1', 'rs-track-0', 'rs-track-1', 'rs-track-2']);
    expect((await get(apiKey, '/v1/usage')).json().used).toBe(4);
    const read = await get(apiKey, '/v1/events/rs-track-1');
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json()).toMatchObject({ eventName: 'Ship Launched' });

    const { values, keys } = await gw.readTopic<{ messageId?: string }>(
      'deadLetters',
      (v) => v.some((m) => m?.messageId === 'rs-too-big'),
      'the oversize message in the dead letters',
    );
    expect(keys[values.findIndex((m) => m?.messageId === 'rs-too-big')]).toBe(`${account.id}:rs-too-big`);
  }, 60_000);
});

/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture, its console's dashboard API) and
 * the real processor in this process (dedupe, storage). The event debugger's reads (issue 29,
 * item 5): a Segment message the gateway refused is listed with its reason and route, an accepted
 * one among the stored events, each account sees only its own, and every list is bounded.
 */
import { segmentDeadLetter } from '@ingest/domain';
import type { Component } from '@ingest/platform';
import { waitFor } from '@ingest/testkit';
import { createGatewayFixture, type DashboardUser, type GatewayFixture, randomClientIp, signedInOwner } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEAD_LETTER_DETAIL_MAX_BYTES, DEAD_LETTER_LIST_LIMIT } from './dead-letter.routes.js';

let gw: GatewayFixture;
let parts: Component[] = [];
type Owner = { accountId: string; apiKey: string; user: DashboardUser };
let a: Owner;
let b: Owner;

beforeAll(async () => {
  gw = await createGatewayFixture();
  parts = await startProcessorFor(gw, 'event-debugger');
  const owner = async (): Promise<Owner> => {
    const { account, apiKey } = await gw.newAccount('pro');
    return { accountId: account.id, apiKey, user: await signedInOwner(gw, account.id) };
  };
  [a, b] = await Promise.all([owner(), owner()]);
}, 60_000);

afterAll(async () => {
  for (const part of [...parts].reverse()) await part.stop();
  await gw?.close();
});

type Letter = { topic: string; position: string; code: string; reason: string; route: string | null; eventId: string | null; failedAt: string };
const refusedOf = async (user: DashboardUser) => {
  const res = await user.request({ method: 'GET', url: '/dashboard/api/deadletters?topic=events&refresh=true' });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { limit: number; entries: Letter[]; truncated: boolean };
};
const detailOf = (user: DashboardUser, letter: Pick<Letter, 'topic' | 'position'>) =>
  user.request({ method: 'GET', url: `/dashboard/api/deadletters/${letter.topic}/${letter.position}` });

describe('event debugger API', () => {
  it('lists an accepted and a refused Segment message of the account, the refused one with its reason, route and stored fields; the other account sees neither', async () => {
    const sent = await gw.app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${a.apiKey}:`).toString('base64')}` },
      payload: {
        batch: [
          { type: 'track', userId: 'dbg-user', event: 'Debugged', messageId: 'dbg-ok', properties: { plan: 'pro' } },
          { type: 'track', event: 'Nobody', messageId: 'dbg-refused', properties: { secret: 'only-for-the-owner' } },
        ],
      },
      remoteAddress: randomClientIp(),
    });
    expect(sent.json()).toMatchObject({ success: true, accepted: 1, rejected: 1 });

    const refused = await waitFor(
      async () => {
        const list = await refusedOf(a.user);
        const found = list.entries.find((e) => e.eventId === 'dbg-refused');
        if (!found) throw new Error(`listed so far: ${JSON.stringify(list)}`);
        return found;
      },
      { description: "the refused message in the owner's debugger", timeoutMs: 20_000 },
    );
    expect(refused).toMatchObject({ topic: 'events', code: 'required', route: '/v1/batch', reason: expect.stringContaining('userId') });

    const detail = await detailOf(a.user, refused);
    expect(detail.statusCode, detail.body).toBe(200);
    expect(detail.headers['cache-control']).toContain('no-store');
    expect(detail.json()).toMatchObject({
      letter: { eventId: 'dbg-refused', code: 'required', route: '/v1/batch' },
      value: { type: 'track', event: 'Nobody', messageId: 'dbg-refused', properties: { secret: 'only-for-the-owner' } },
      valueShown: true,
    });

    const accepted = await waitFor(
      async () => {
        const res = await a.user.request({ method: 'GET', url: '/dashboard/api/events' });
        const events = (res.json().events ?? []) as { eventId: string; eventName: string }[];
        if (!events.some((e) => e.eventId === 'dbg-ok')) throw new Error(`listed so far: ${res.body}`);
        return events;
      },
      { description: "the accepted message in the owner's debugger", timeoutMs: 30_000 },
    );
    expect(accepted.map((e) => e.eventId)).toEqual(['dbg-ok']);

    // The other account: nothing listed, and a's letter and event are not found by position or id.
    expect((await refusedOf(b.user)).entries).toEqual([]);
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/events' })).json().events).toEqual([]);
    const theirs = await detailOf(b.user, refused);
    expect(theirs.statusCode).toBe(404);
    expect(theirs.body).not.toContain('only-for-the-owner');
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/events/dbg-ok' })).statusCode).toBe(404);
    // Without a session nothing is read.
    expect((await gw.console.inject({ method: 'GET', url: `/dashboard/api/deadletters/${refused.topic}/${refused.position}` })).statusCode).toBe(401);
  });

  it('keeps the newest letters when an account has more than the list shows, and does not show a value over the size bound', async () => {
    const refusal = (i: number, message: object = { type: 'track', event: 'Many', messageId: `many-${i}` }) =>
      segmentDeadLetter({
        accountId: b.accountId,
        messageId: `many-${i}`,
        message,
        code: 'required',
        reason: 'no userId',
        route: '/v1/t',
        atMs: Date.now() + i,
      });
    const total = DEAD_LETTER_LIST_LIMIT + 5;
    await gw.producer.send(
      gw.kafka.topic('deadLetters'),
      Array.from({ length: total - 1 }, (_, i) => refusal(i)),
    );
    await gw.producer.send(gw.kafka.topic('deadLetters'), [
      refusal(total - 1, { type: 'track', messageId: `many-${total - 1}`, blob: 'x'.repeat(DEAD_LETTER_DETAIL_MAX_BYTES) }),
    ]);

    const list = await waitFor(
      async () => {
        const l = await refusedOf(b.user);
        if (!l.entries.some((e) => e.eventId === `many-${total - 1}`))
          throw new Error(`listed so far: ${l.entries.length} letters, newest ${l.entries[0]?.eventId}`);
        return l;
      },
      { description: 'the newest letters', timeoutMs: 20_000 },
    );
    expect(list.limit).toBe(DEAD_LETTER_LIST_LIMIT);
    expect(list.truncated).toBe(true);
    expect(list.entries).toHaveLength(DEAD_LETTER_LIST_LIMIT);
    // Newest first: the last five sent are the first five listed; the oldest five are left out.
    expect(list.entries.slice(0, 3).map((e) => e.eventId)).toEqual([`many-${total - 1}`, `many-${total - 2}`, `many-${total - 3}`]);
    expect(list.entries.map((e) => e.eventId)).not.toContain('many-4');
    expect(list.entries.map((e) => e.eventId)).toContain('many-5');

    const big = await detailOf(b.user, list.entries[0] as Letter);
    expect(big.statusCode).toBe(200);
    expect(big.json()).toMatchObject({ letter: { eventId: `many-${total - 1}` }, value: null, valueShown: false });
    expect(big.body.length).toBeLessThan(4_096);

    // The account's letters are still a's and b's own.
    expect((await refusedOf(a.user)).entries.map((e) => e.eventId)).toEqual(['dbg-refused']);
  });

  it('answers a malformed position with 400 problem+json', async () => {
    for (const url of ['/dashboard/api/deadletters/events/x/1', '/dashboard/api/deadletters/nowhere/0/1', '/dashboard/api/deadletters?topic=nowhere']) {
      const res = await a.user.request({ method: 'GET', url });
      expect(res.statusCode, url).toBe(400);
      expect(res.headers['content-type']).toContain('application/problem+json');
    }
  });
});

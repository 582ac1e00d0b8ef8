/**
 * Real servers (Kafka control plane, Redis, ClickHouse) through the real gateway app: the CRM
 * mapping and event debugger APIs of the dashboard take the account from the session only,
 * refuse writes without CSRF protection and answer bad input with a precise 4xx.
 */
import { createSyncStateStore } from '@ingest/domain';
import { readDeadLetters, REPLAYED_FROM_HEADER, toDeadLetterMessage } from '@ingest/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayFixture, type GatewayFixture } from '@ingest/testkit/gateway';
import { type DashboardUser, signedInOwner } from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let a: { accountId: string; apiKey: string; user: DashboardUser };
let b: { accountId: string; apiKey: string; user: DashboardUser };

const mappingDoc = (field: string) => ({
  version: 1,
  crm: { type: 'webhook', credentialsRef: 'hook' },
  rules: [{ id: 'signed-up', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field, from: { property: 'plan' } }] }],
});

beforeAll(async () => {
  gw = await createGatewayFixture();
  const setUp = async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    return { accountId: account.id, apiKey, user: await signedInOwner(gw, account.id) };
  };
  a = await setUp();
  b = await setUp();
});

afterAll(async () => {
  await gw?.close();
});

const json = { 'content-type': 'application/json' };

describe('CRM mapping API', () => {
  it("stores the session account's mapping with the owner as author; the other account sees none of it", async () => {
    const saved = await a.user.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: mappingDoc('plan_a'), headers: json });
    expect(saved.statusCode).toBe(201);
    expect(saved.headers.etag).toBe('"1"');
    expect(saved.json()).toMatchObject({ accountId: a.accountId, version: 1, author: `owner:${a.user.email}` });

    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/mapping' })).json()).toEqual({ current: null });
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions' })).json()).toEqual({ versions: [] });
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions/1' })).statusCode).toBe(404);
    // b's dry-run without a draft has no mapping to use: a's is never taken.
    const dry = await b.user.request({
      method: 'POST',
      url: '/dashboard/api/mapping/dry-run',
      payload: { event: { eventName: 'Signed Up', email: 'x@example.com' } },
      headers: json,
    });
    expect(dry.statusCode).toBe(404);

    const mine = (await a.user.request({ method: 'GET', url: '/dashboard/api/mapping' })).json();
    expect(mine.current).toMatchObject({ version: 1, mapping: mappingDoc('plan_a') });
  });

  it('refuses a save without the CSRF token or from a foreign origin, and stores nothing', async () => {
    const put = (headers: Record<string, string | undefined>) =>
      b.user.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: mappingDoc('plan_b'), headers: { ...json, ...headers } });
    expect((await put({ 'x-csrf-token': undefined })).statusCode).toBe(403);
    expect((await put({ 'x-csrf-token': a.user.csrfToken })).statusCode).toBe(403);
    expect((await put({ origin: 'https://evil.example' })).statusCode).toBe(403);
    expect((await b.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions' })).json()).toEqual({ versions: [] });
  });

  it('answers an invalid document with every error as a JSON Pointer, a stale If-Match with 412, a bad one with 400', async () => {
    const bad = await a.user.request({
      method: 'PUT',
      url: '/dashboard/api/mapping',
      payload: { ...mappingDoc('plan'), rules: [{ id: 'Bad Id', object: 'person', actions: [] }] },
      headers: { ...json, 'if-match': '"1"' },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toContain('application/problem+json');
    const fields = (bad.json().errors as { field: string }[]).map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['/rules/0/id', '/rules/0/object']));

    const notJson = await a.user.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: '{"version":', headers: json });
    expect(notJson.statusCode).toBe(400);

    const v2 = await a.user.request({ method: 'PUT', url: '/dashboard/api/mapping', payload: mappingDoc('plan_2'), headers: { ...json, 'if-match': '"1"' } });
    expect(v2.statusCode).toBe(201);
    const stale = await a.user.request({
      method: 'PUT',
      url: '/dashboard/api/mapping',
      payload: mappingDoc('plan_3'),
      headers: { ...json, 'if-match': '"1"' },
    });
    expect(stale.statusCode).toBe(412);
    expect(stale.json()).toMatchObject({ currentVersion: 2 });
    const malformed = await a.user.request({
      method: 'PUT',
      url: '/dashboard/api/mapping',
      payload: mappingDoc('plan_3'),
      headers: { ...json, 'if-match': 'yesterday' },
    });
    expect(malformed.statusCode).toBe(400);
    expect((await a.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions/abc' })).statusCode).toBe(400);

    const versions = (await a.user.request({ method: 'GET', url: '/dashboard/api/mapping/versions' })).json().versions;
    expect(versions.map((v: { version: number }) => v.version)).toEqual([2, 1]);
  });

  it('dry-runs an event with the current version or a draft; errors point into the event and the draft', async () => {
    const event = { eventName: 'Signed Up', email: 'ada@example.com', properties: { plan: 'pro' } };
    const current = await a.user.request({ method: 'POST', url: '/dashboard/api/mapping/dry-run', payload: { event }, headers: json });
    expect(current.statusCode).toBe(200);
    expect(current.json()).toMatchObject({
      mappingVersion: 2,
      operations: [{ ruleId: 'signed-up', set: { plan_2: 'pro' } }],
      rules: [{ ruleId: 'signed-up', matched: true }],
    });

    const bad = await a.user.request({
      method: 'POST',
      url: '/dashboard/api/mapping/dry-run',
      payload: { event: { email: 'ada@example.com' }, mapping: { ...mappingDoc('x'), version: 2 } },
      headers: json,
    });
    expect(bad.statusCode).toBe(400);
    const fields = (bad.json().errors as { field: string }[]).map((e) => e.field);
    expect(fields).toEqual(expect.arrayContaining(['/event/eventName', '/mapping/version']));
  });

  it('refuses the API without a session', async () => {
    const anonymous = await gw.console.inject({ method: 'GET', url: '/dashboard/api/mapping', headers: { host: 'dashboard.test' } });
    expect(anonymous.statusCode).toBe(401);
  });
});

/** A row of the `events` table as the processor writes it (the events-table module of @ingest/domain). */
function row(accountId: string, eventId: string, eventName: string, email: string, domain: string, receivedAtMs: number, insertedAtMs = Date.now()) {
  return {
    account_id: accountId,
    event_id: eventId,
    event_name: eventName,
    email,
    domain,
    event_time: Math.floor(receivedAtMs / 1000),
    event_time_ms: receivedAtMs,
    received_at: Math.floor(receivedAtMs / 1000),
    received_at_ms: receivedAtMs,
    properties: JSON.stringify({ plan: 'pro' }),
    source: 'api',
    job_id: '',
    inserted_at: Math.floor(insertedAtMs / 1000),
  };
}

describe('event debugger API', () => {
  const now = Date.now();
  beforeAll(async () => {
    await gw.clickhouse.ch.insert('events', [
      row(a.accountId, 'evt-a-1', 'Signed Up', 'ada@acme.io', 'acme.io', now - 5_000),
      row(a.accountId, 'evt-a-2', 'Upgraded', 'grace@navy.mil', '', now - 3_000),
      row(a.accountId, "evt-a-3'; DROP TABLE events --", "Quote ' \\ name", 'x@example.com', '', now - 1_000),
      row(a.accountId, 'evt-a-old', 'Signed Up', 'old@acme.io', '', now - 8 * 24 * 3600_000),
      row(b.accountId, 'evt-b-1', 'Signed Up', 'ada@acme.io', 'acme.io', now - 2_000),
    ]);
    // A redelivered copy not merged yet: a second part with the same event.
    await gw.clickhouse.ch.insert('events', [row(a.accountId, 'evt-a-1', 'Signed Up', 'ada@acme.io', 'acme.io', now - 5_000, now + 1_000)]);
    await createSyncStateStore({ redis: gw.redis }).record([
      { accountId: a.accountId, eventId: 'evt-a-2', state: 'failed', reason: 'Property "seats" does not exist' },
    ]);
  });

  const list = (user: DashboardUser, query = '') => user.request({ method: 'GET', url: `/dashboard/api/events${query}` });

  it("lists the session account's events of the last 7 days, newest first, each once, with the sync state", async () => {
    const response = await list(a.user);
    expect(response.statusCode).toBe(200);
    const events = response.json().events as { eventId: string; copies: number; sync: { state: string; reason?: string } }[];
    expect(events.map((e) => e.eventId)).toEqual(["evt-a-3'; DROP TABLE events --", 'evt-a-2', 'evt-a-1']);
    expect(events[2]).toMatchObject({ eventName: 'Signed Up', email: 'ada@acme.io', domain: 'acme.io', copies: 2, sync: { state: 'pending' } });
    expect(events[1]?.sync).toMatchObject({ state: 'failed', reason: 'Property "seats" does not exist' });

    const others = (await list(b.user)).json().events as { eventId: string }[];
    expect(others.map((e) => e.eventId)).toEqual(['evt-b-1']);
  });

  it('filters by event name and by email or domain on the server, with any text safely escaped', async () => {
    const byName = (await list(a.user, '?name=upgr')).json().events as { eventId: string }[];
    expect(byName.map((e) => e.eventId)).toEqual(['evt-a-2']);
    const byDomain = (await list(a.user, '?identity=ACME.IO')).json().events as { eventId: string }[];
    expect(byDomain.map((e) => e.eventId)).toEqual(['evt-a-1']);
    const quoted = (await list(a.user, `?name=${encodeURIComponent("Quote ' \\")}`)).json().events as { eventId: string }[];
    expect(quoted.map((e) => e.eventId)).toEqual(["evt-a-3'; DROP TABLE events --"]);
    const injection = await list(a.user, `?identity=${encodeURIComponent("' OR 1=1 --")}`);
    expect(injection.statusCode).toBe(200);
    expect(injection.json().events).toEqual([]);
    // b's filter never reaches a's events.
    expect(((await list(b.user, '?name=Upgraded')).json().events as unknown[]).length).toBe(0);
  });

  it('answers a bad filter with a precise 400, and reads one event of the own account only', async () => {
    const tooLong = await list(a.user, `?name=${'x'.repeat(201)}`);
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.headers['content-type']).toContain('application/problem+json');
    expect((await list(a.user, '?account=other')).statusCode).toBe(400);

    const mine = await a.user.request({ method: 'GET', url: '/dashboard/api/events/evt-a-2' });
    expect(mine.statusCode).toBe(200);
    expect(mine.json()).toMatchObject({ eventId: 'evt-a-2', properties: { plan: 'pro' }, sync: { state: 'failed' } });
    const theirs = await a.user.request({ method: 'GET', url: '/dashboard/api/events/evt-b-1' });
    expect(theirs.statusCode).toBe(404);
  });
});

describe('dead letters', () => {
  /** A letter as the processors write it: the original message (key `<account>:<eventId>`, the event as JSON) plus dlq-* headers. */
  const letter = (accountId: string, eventId: string, sourceTopic: string, code: string) =>
    toDeadLetterMessage('storage', {
      message: {
        topic: sourceTopic,
        partition: 0,
        offset: '7',
        key: Buffer.from(`${accountId}:${eventId}`),
        value: Buffer.from(JSON.stringify({ accountId, eventId, eventName: 'Signed Up' })),
        headers: {},
        timestamp: Date.now(),
      },
      code,
      reason: `${code} for ${eventId}`,
    });

  beforeAll(async () => {
    await gw.producer.send(gw.kafka.topic('deadLetters'), [
      letter(a.accountId, 'dl-a-1', gw.kafka.topic('eventsRaw'), 'schema_mismatch'),
      letter(b.accountId, 'dl-b-1', gw.kafka.topic('eventsRaw'), 'schema_mismatch'),
      // Key and value disagree: nobody's.
      { ...letter(a.accountId, 'dl-forged', gw.kafka.topic('eventsRaw'), 'forged'), key: `${b.accountId}:dl-forged` },
    ]);
    await gw.producer.send(gw.kafka.topic('crmDeadLetters'), [letter(a.accountId, 'dl-a-crm', gw.kafka.topic('eventsUnique'), 'crm_rejected')]);
  });

  type Letter = { topic: string; position: string; code: string; reason: string; eventId: string };
  const listOf = async (user: DashboardUser) => {
    const response = await user.request({ method: 'GET', url: '/dashboard/api/deadletters' });
    expect(response.statusCode).toBe(200);
    return response.json().entries as Letter[];
  };

  it('lists only the dead letters of the session account, from both topics, with their reason', async () => {
    const mine = await listOf(a.user);
    expect(mine.map((e) => [e.topic, e.eventId, e.code]).sort()).toEqual([
      ['crm', 'dl-a-crm', 'crm_rejected'],
      ['events', 'dl-a-1', 'schema_mismatch'],
    ]);
    expect(mine.find((e) => e.eventId === 'dl-a-1')?.reason).toBe('schema_mismatch for dl-a-1');
    expect((await listOf(b.user)).map((e) => e.eventId)).toEqual(['dl-b-1']);
  });

  it("refuses a replay without CSRF protection, and another account's letter is not found", async () => {
    const theirs = (await listOf(b.user))[0];
    const replay = (user: DashboardUser, body: unknown, headers: Record<string, string | undefined> = {}) =>
      user.request({ method: 'POST', url: '/dashboard/api/deadletters/replay', payload: body as Record<string, unknown>, headers: { ...json, ...headers } });
    const mine = (await listOf(a.user)).find((e) => e.eventId === 'dl-a-1');
    expect((await replay(a.user, { topic: 'events', position: mine?.position }, { 'x-csrf-token': undefined })).statusCode).toBe(403);
    expect((await replay(a.user, { topic: 'events', position: mine?.position }, { origin: 'https://evil.example' })).statusCode).toBe(403);
    expect((await replay(a.user, { topic: 'events', position: theirs?.position })).statusCode).toBe(404);
    const bad = await replay(a.user, { topic: 'nowhere', position: '0/x' });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toContain('application/problem+json');
  });

  it('replays the selected letter to its source topic (CRM letters to crm.replay), marked with where it came from', async () => {
    const mine = await listOf(a.user);
    const eventsLetter = mine.find((e) => e.eventId === 'dl-a-1');
    const crmLetter = mine.find((e) => e.eventId === 'dl-a-crm');
    const replay = (body: unknown) =>
      a.user.request({ method: 'POST', url: '/dashboard/api/deadletters/replay', payload: body as Record<string, unknown>, headers: json });
    const first = await replay({ topic: 'events', position: eventsLetter?.position });
    expect(first.statusCode).toBe(200);
    expect(first.json()).toMatchObject({ to: 'events.raw', replayed: { eventId: 'dl-a-1' } });
    const second = await replay({ topic: 'crm', position: crmLetter?.position });
    expect(second.json()).toMatchObject({ to: 'crm.replay', replayed: { eventId: 'dl-a-crm' } });

    const replayedOf = (topic: string) => readDeadLetters(gw.kafka.kafka, topic, { limit: 100, filter: (e) => e.headers[REPLAYED_FROM_HEADER] !== undefined });
    const raw = await replayedOf(gw.kafka.topic('eventsRaw'));
    expect(raw.map((e) => [e.key?.toString(), e.headers[REPLAYED_FROM_HEADER]])).toEqual([
      [`${a.accountId}:dl-a-1`, `${gw.kafka.topic('deadLetters')}/${eventsLetter?.position}`],
    ]);
    const crm = await replayedOf(gw.kafka.topic('crmReplay'));
    expect(crm.map((e) => e.key?.toString())).toEqual([`${a.accountId}:dl-a-crm`]);
  });
});

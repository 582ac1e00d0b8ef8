/**
 * Real servers: Kafka, Redis and ClickHouse (the local 18.16: erasure by `ALTER TABLE … DELETE`
 * and a wait on system.mutations), the gateway and admin apps in process (fastify inject), and
 * the real processor in this process (dedupe, storage) with the erasure suppression list.
 * Issue 28, item 4: an erased person's events are deleted and read back 404; their copies still
 * in Kafka (a redelivery, a replay) are not stored again; another person's events stay; an
 * unknown person answers 200 with zero counts and is audited; an erase while the writer is
 * mid-insert loses nothing of others and leaves nothing of the person.
 */
import {
  createIdentityMapIndex,
  createSuppressionList,
  identityTopicMessages,
  EVENT_COLUMNS,
  identifierHash,
  toEventLine,
  recordStateKeys,
  pendingLinkMember,
  type SuppressionList,
} from '@ingest/domain';
import { type ClickHouse, committedOffsets, type Component, createMetricsRegistry, ident, sql, toDeadLetterMessage, topicOffsets } from '@ingest/platform';
import { createReaderClickHouse, integrationEnv, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { ADMIN_TOKEN, createGatewayFixture, type GatewayFixture, randomClientIp, signedInOwner } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildAdminApp } from '../index.js';
import { loadConsoleConfig } from '../config.js';

let gw: GatewayFixture;
let admin: FastifyInstance;
let consoleConfig: ReturnType<typeof loadConsoleConfig>;
let erasures: SuppressionList;
let parts: Component[] = [];
let accountId: string;
let apiKey: string;
const storageGroup = `storage-erasure-${uniqueSuffix()}`;
const redisKeyPrefix = `t${uniqueSuffix()}:`;

/** Inserts of `events` wait while `held` is set: the writer is then mid-insert. */
let held: { started: () => void; release: Promise<void> } | undefined;
function holdingInserts(ch: ClickHouse): ClickHouse {
  return {
    ...ch,
    database: ch.database,
    query: (q) => ch.query(q),
    command: (q) => ch.command(q),
    insert: (t, rows) => ch.insert(t, rows),
    ping: () => ch.ping(),
    close: () => Promise.resolve(),
    async insertTabSeparated(table, columns, lines) {
      const hold = held;
      if (hold && table === 'events') {
        hold.started();
        await hold.release;
      }
      return ch.insertTabSeparated(table, columns, lines);
    },
  };
}

beforeAll(async () => {
  gw = await createGatewayFixture();
  erasures = createSuppressionList({ kafka: gw.kafka.kafka, topic: gw.kafka.topic('erasures'), logger: testLogger() });
  await erasures.start();
  parts = await startProcessorFor(gw, 'processor-erasure', { ch: holdingInserts(gw.clickhouse.ch), storageGroup, erasures });
  // The console's admin app as main.ts builds it: the writing ClickHouse user, and Kafka.
  const config = (consoleConfig = loadConsoleConfig({
    ADMIN_TOKEN,
    REDIS_URL: integrationEnv().redisUrl,
    REDIS_KEY_PREFIX: redisKeyPrefix,
    KAFKA_TOPIC_PREFIX: gw.kafka.prefix,
    PROCESSOR_STORAGE_GROUP: storageGroup,
    ERASURE_WAIT_MS: '20000',
    RATE_LIMIT_PER_MINUTE: '100000',
  }));
  admin = await buildAdminApp({
    config,
    logger: testLogger(),
    metrics: createMetricsRegistry('admin-erasure-test'),
    redis: gw.redis,
    controlPlane: gw.controlPlane,
    producer: gw.producer,
    ch: gw.clickhouse.ch,
    kafka: gw.kafka.kafka,
  });
  await admin.ready();
  ({
    account: { id: accountId },
    apiKey,
  } = await gw.newAccount('pro'));
}, 120_000);

afterAll(async () => {
  held = undefined;
  await admin?.close();
  for (const part of [...parts].reverse()) await part.stop();
  await erasures?.stop();
  const keys = gw ? await gw.redis.keys(`${redisKeyPrefix}*`) : [];
  if (keys.length > 0) await gw.redis.del(...keys);
  await gw?.close();
});

const erase = (type: string, value: string, account = accountId, app: FastifyInstance = admin) =>
  app.inject({
    method: 'POST',
    url: `/admin/v1/accounts/${account}/erasures`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    payload: { type, value },
    remoteAddress: randomClientIp(),
  });

/** A stored event record of the test's account (the processor's input on events.unique). */
const eventRecord = (eventId: string, eventName: string, email: string) => ({
  v: 1 as const,
  accountId,
  eventId,
  eventName,
  email,
  domain: null,
  timestampMs: Date.now(),
  receivedAtMs: Date.now(),
  properties: {},
  source: 'api' as const,
  jobId: null,
});

async function send(events: { eventId: string; email?: string; domain?: string }[]): Promise<void> {
  const res = await gw.app.inject({
    method: 'POST',
    url: '/v1/events',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ events: events.map((e) => ({ eventName: 'signup', ...e })) }),
    remoteAddress: randomClientIp(),
  });
  expect(res.statusCode, res.body).toBe(202);
}

const readBack = (eventId: string) =>
  gw.app.inject({ method: 'GET', url: `/v1/events/${eventId}`, headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() });

async function stored(eventIds: string[]): Promise<void> {
  await waitFor(
    async () => {
      const statuses = await Promise.all(eventIds.map(async (id) => (await readBack(id)).statusCode));
      // Thrown, so the timeout message shows the last statuses seen.
      if (!statuses.every((s) => s === 200)) throw new Error(`read-back statuses ${JSON.stringify(statuses)}`);
      return true;
    },
    { description: `events ${eventIds.join(', ')} read back`, timeoutMs: 30_000 },
  );
}

/** The storage writer has handled (stored or dropped) everything events.unique holds now. */
async function writerPassedEnd(): Promise<void> {
  const topic = gw.kafka.topic('eventsUnique');
  const ends = await topicOffsets(gw.kafka.kafka, topic);
  await waitFor(
    async () => {
      const committed = await committedOffsets(gw.kafka.kafka, storageGroup, topic);
      const behind = ends.filter((r) => r.high > r.low && BigInt(committed.get(r.partition) ?? '-1') < r.high);
      if (behind.length > 0)
        throw new Error(`behind on partitions ${behind.map((r) => `${r.partition} (end ${r.high}, committed ${committed.get(r.partition)})`).join(', ')}`);
      return true;
    },
    { description: 'the storage writer past the end of events.unique', timeoutMs: 30_000 },
  );
}

async function rowsOf(column: 'email' | 'domain', value: string): Promise<number> {
  const rows = await gw.clickhouse.ch.query<{ n: string }>(
    sql`SELECT count() AS n FROM events WHERE account_id = ${accountId} AND ${ident(column)} = ${value}`,
  );
  return Number(rows[0]?.n ?? 0);
}

describe('POST /admin/v1/accounts/{accountId}/erasures', () => {
  it('erases a person: events deleted and read back 404, CRM state gone, others untouched; redelivered copies are not stored again', async () => {
    await send([
      { eventId: 'ada-1', email: 'ada@erase.example' },
      { eventId: 'ada-2', email: 'Ada@Erase.example', domain: 'erase.example' },
      { eventId: 'bob-1', email: 'bob@keep.example' },
    ]);
    await stored(['ada-1', 'ada-2', 'bob-1']);
    // The sink's state of both contacts, and a link of each waiting for a company.
    const keys = recordStateKeys(redisKeyPrefix);
    await gw.redis.hset(keys.state(accountId, 'contact', 'ada@erase.example'), 'firstname', 'Ada');
    await gw.redis.hset(keys.state(accountId, 'contact', 'bob@keep.example'), 'firstname', 'Bob');
    await gw.redis.sadd(keys.pendingLinks(accountId, 'acme.example'), pendingLinkMember('ada@erase.example'), pendingLinkMember('bob@keep.example'));

    // The identity map knows ada under a Segment userId, bob under another (as the dedupe stage writes them).
    const map = createIdentityMapIndex({ redis: gw.redis, keyPrefix: redisKeyPrefix });
    const entries = [
      ['u:ada-user', { v: 1, email: 'ada@erase.example', updatedAt: Date.now() }],
      ['u:bob-user', { v: 1, email: 'bob@keep.example', updatedAt: Date.now() }],
    ] as const;
    await gw.producer.send(gw.kafka.topic('identities'), identityTopicMessages(accountId, entries));
    await map.put(accountId, entries);

    const res = await erase('email', '  ADA@erase.example ');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      accountId,
      type: 'email',
      identifierHash: identifierHash(accountId, 'email', 'ada@erase.example'),
      counts: { events: 2, crmRecords: 1, pendingLinks: 1, identityLinks: 1 },
      complete: true,
    });
    // Later userId-only events of ada's user are not joined to the erased email; bob's entry stays.
    expect([...(await map.get(accountId, ['u:ada-user', 'u:bob-user'])).keys()]).toEqual(['u:bob-user']);

    expect((await readBack('ada-1')).statusCode).toBe(404);
    expect((await readBack('ada-2')).statusCode).toBe(404);
    expect((await readBack('bob-1')).statusCode).toBe(200);
    expect(await gw.redis.exists(keys.state(accountId, 'contact', 'ada@erase.example'))).toBe(0);
    expect(await gw.redis.hget(keys.state(accountId, 'contact', 'bob@keep.example'), 'firstname')).toBe('Bob');
    expect(await gw.redis.smembers(keys.pendingLinks(accountId, 'acme.example'))).toEqual([pendingLinkMember('bob@keep.example')]);

    // A redelivery (or a replay of a dead letter) of the person's event, and new ones of both
    // people: once the writer has handled all of them, only the other person's are stored.
    const copy = eventRecord('ada-3', 'signup', 'ada@erase.example');
    await gw.producer.send(gw.kafka.topic('eventsUnique'), [{ key: `${accountId}:ada@erase.example`, value: JSON.stringify(copy) }]);
    await send([
      { eventId: 'ada-4', email: 'ada@erase.example' },
      { eventId: 'bob-2', email: 'bob@keep.example' },
    ]);
    await stored(['bob-2']);
    await writerPassedEnd();
    expect((await readBack('ada-3')).statusCode).toBe(404);
    expect((await readBack('ada-4')).statusCode).toBe(404);
    expect(await rowsOf('email', 'ada@erase.example')).toBe(0);

    // The audit record names the erasure by hash, never the email.
    const audit = await gw.readTopic<{ action: string; target: string; after: Record<string, unknown> }>(
      'auditLog',
      (values) => values.some((v) => v.action === 'erasure.erase'),
      'the erasure audit record',
    );
    const record = audit.values.find((v) => v.action === 'erasure.erase');
    expect(record?.target).toBe(`email/sha256:${body.identifierHash}`);
    expect(record?.after).toMatchObject({ erasureId: body.id, counts: body.counts, complete: true });
    expect(JSON.stringify(audit.values)).not.toContain('ada@');
  }, 90_000);

  it('answers 200 with zero counts for a person the account never saw, and audits it', async () => {
    const res = await erase('email', 'nobody@unknown.example');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ counts: { events: 0, crmRecords: 0, pendingLinks: 0 }, complete: true });
    const hash = identifierHash(accountId, 'email', 'nobody@unknown.example');
    await gw.readTopic<{ action: string; target: string }>(
      'auditLog',
      (values) => values.some((v) => v.action === 'erasure.erase' && v.target === `email/sha256:${hash}`),
      'the audit record of the unknown person',
    );
  }, 60_000);

  it('erases a company by domain', async () => {
    await send([
      { eventId: 'co-1', domain: 'gone.example' },
      { eventId: 'co-2', domain: 'stays.example' },
    ]);
    await stored(['co-1', 'co-2']);
    const res = await erase('domain', 'GONE.example.');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ type: 'domain', counts: { events: 1 }, complete: true });
    expect((await readBack('co-1')).statusCode).toBe(404);
    expect((await readBack('co-2')).statusCode).toBe(200);
  }, 60_000);

  it('erases while the writer is mid-insert: nothing of the person is left, nothing of others is lost', async () => {
    let started!: () => void;
    const insertStarted = new Promise<void>((resolve) => (started = resolve));
    let release!: () => void;
    held = { started, release: new Promise<void>((resolve) => (release = resolve)) };
    await send([
      { eventId: 'race-eve-1', email: 'eve@race.example' },
      { eventId: 'race-bob-1', email: 'bob@race.example' },
    ]);
    await insertStarted;
    // The insert holding both rows is running. The erase records the suppression and must then
    // wait for that insert: it is released only once the writer's list knows the erasure, so
    // a delete that did not wait would run before the row lands and leave it behind.
    const pending = erase('email', 'eve@race.example');
    await waitFor(() => erasures.suppressed({ accountId, email: 'eve@race.example' }), { description: 'the suppression in the list', timeoutMs: 20_000 });
    held = undefined;
    release();
    const res = await pending;
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ counts: { events: 1 }, complete: true });
    expect((await readBack('race-eve-1')).statusCode).toBe(404);
    expect((await readBack('race-bob-1')).statusCode).toBe(200);
    expect(await rowsOf('email', 'eve@race.example')).toBe(0);
  }, 60_000);

  it('deletes the rows of erased people again after a backup brought them back (POST /erasures/reapply)', async () => {
    // A restore puts rows back without the writer: here, written straight into the table.
    const row = (eventId: string, email: string) => toEventLine(eventRecord(eventId, 'x', email), Date.now());
    await gw.clickhouse.ch.insertTabSeparated('events', EVENT_COLUMNS, [row('restored-ada', 'ada@erase.example'), row('restored-bob', 'bob@keep.example')]);
    expect(await rowsOf('email', 'ada@erase.example')).toBe(1);
    const res = await admin.inject({
      method: 'POST',
      url: '/admin/v1/erasures/reapply',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      remoteAddress: randomClientIp(),
    });
    expect(res.statusCode, res.body).toBe(200);
    // The earlier tests' erasures: ada, nobody, gone.example, eve.
    expect(res.json()).toMatchObject({ suppressions: 4, skipped: 0, events: 1, complete: true });
    expect(await rowsOf('email', 'ada@erase.example')).toBe(0);
    expect((await readBack('restored-bob')).statusCode).toBe(200);
  }, 60_000);

  it("the dashboard does not replay an erased person's dead letter (409), and replays another's", async () => {
    const owner = await signedInOwner(gw, accountId);
    const letter = (eventId: string, email: string) =>
      toDeadLetterMessage('storage', {
        message: {
          topic: gw.kafka.topic('eventsUnique'),
          partition: 0,
          offset: '1',
          key: Buffer.from(`${accountId}:${email}`),
          value: Buffer.from(JSON.stringify(eventRecord(eventId, 'x', email))),
          headers: {},
          timestamp: Date.now(),
        },
        code: 'erasure_test',
        reason: 'for the erasure test',
      });
    await gw.producer.send(gw.kafka.topic('deadLetters'), [letter('dl-ada', 'ada@erase.example'), letter('dl-bob', 'bob@keep.example')]);
    const positions = await waitFor(
      async () => {
        const list = await owner.request({ method: 'GET', url: '/dashboard/api/deadletters?refresh=true' });
        const entries = list.json<{ entries: { eventId: string; position: string }[] }>().entries;
        const ada = entries.find((e) => e.eventId === 'dl-ada')?.position;
        const bob = entries.find((e) => e.eventId === 'dl-bob')?.position;
        if (!ada || !bob) throw new Error(`listed: ${JSON.stringify(entries.map((e) => e.eventId))}`);
        return { ada, bob };
      },
      { description: 'both dead letters listed on the dashboard', timeoutMs: 20_000 },
    );
    const replay = (position: string) =>
      owner.request({
        method: 'POST',
        url: '/dashboard/api/deadletters/replay',
        payload: { topic: 'events', position },
        headers: { 'content-type': 'application/json' },
      });
    const refused = await replay(positions.ada);
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json()).toMatchObject({ type: '/problems/conflict' });
    expect((await replay(positions.bob)).statusCode).toBe(200);
  }, 60_000);

  it('is in the admin OpenAPI document, with the request and answer schemas', async () => {
    const res = await admin.inject({
      method: 'GET',
      url: '/admin/v1/openapi.json',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      remoteAddress: randomClientIp(),
    });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    const erase = doc.paths['/admin/v1/accounts/{accountId}/erasures'].post;
    expect(JSON.stringify(erase.requestBody.content['application/json'].schema.properties.type)).toMatch(/"email".*"domain"/);
    expect(Object.keys(erase.responses)).toEqual(expect.arrayContaining(['200', '400', '404']));
    expect(Object.keys(erase.responses['200'].content['application/json'].schema.properties)).toEqual(
      expect.arrayContaining(['counts', 'complete', 'identifierHash']),
    );
    expect(doc.paths['/admin/v1/erasures/reapply'].post).toBeDefined();
  });

  it('refuses what is not an email or domain (400), and an unknown account (404)', async () => {
    const bad = await erase('email', 'not-an-email');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ type: '/problems/validation-error' });
    expect((await erase('phone', '+123')).statusCode).toBe(400);
    expect((await erase('email', 'x'.repeat(400) + '@a.example')).statusCode).toBe(400);
    expect((await erase('email', 'a@b.example', 'acc_does_not_exist')).statusCode).toBe(404);
    const huge = await admin.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${accountId}/erasures`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ type: 'email', value: 'a@b.example', padding: 'x'.repeat(2_000) }),
      remoteAddress: randomClientIp(),
    });
    expect(huge.statusCode).toBe(413);
  });

  // Last: its two erasures are not in the reapply test's count.
  it("deletes with CLICKHOUSE_ERASURE_USER's client when the console reads as the read-only user (the README's stack); the read-only user alone cannot", async () => {
    const reader = createReaderClickHouse(gw.clickhouse.database);
    const build = (erasureCh?: ClickHouse) =>
      buildAdminApp({
        config: consoleConfig,
        logger: testLogger(),
        metrics: createMetricsRegistry('admin-erasure-reader-test'),
        redis: gw.redis,
        controlPlane: gw.controlPlane,
        producer: gw.producer,
        ch: reader,
        kafka: gw.kafka.kafka,
        ...(erasureCh ? { erasureCh } : {}),
      });
    const [withUser, readOnly] = await Promise.all([build(gw.clickhouse.ch), build()]);
    try {
      await send([
        { eventId: 'ro-1', email: 'ro-gone@example.com' },
        { eventId: 'ro-2', email: 'ro-refused@example.com' },
      ]);
      await stored(['ro-1', 'ro-2']);
      const res = await erase('email', 'ro-gone@example.com', accountId, withUser);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ counts: { events: 1 }, complete: true });
      expect((await readBack('ro-1')).statusCode).toBe(404);
      // Why the setting exists: ClickHouse refuses the delete to the read-only user.
      const refused = await erase('email', 'ro-refused@example.com', accountId, readOnly);
      expect(refused.statusCode, refused.body).toBe(503);
      // Not the generic "nothing was done": the suppression holds, and the same request finishes it.
      expect(refused.json()).toMatchObject({ suppressed: true, failedStep: 'deleting the stored events' });
      expect(refused.json().detail).toMatch(/suppression was recorded.*Send the same request again/);
    } finally {
      await Promise.all([withUser.close(), readOnly.close(), reader.close()]);
    }
  }, 90_000);
});

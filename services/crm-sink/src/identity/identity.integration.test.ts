/**
 * Real servers: Kafka, Redis, ClickHouse (the gateway fixture, on a real port), the real
 * processor (dedupe with the identity map, storage) and the real crm-sink in this process; the
 * CRM is the in-memory double (adapters/memory-crm.fixture.ts). The real `@segment/analytics-node`
 * SDK for the identify-then-track case. Issue 29 item 4: the per-account identity map, its join,
 * the late identify, aliases, erasure and the rebuild of its Redis index (docs/segment.md).
 */
import { Analytics } from '@segment/analytics-node';
import {
  type CrmCredential,
  createIdentityMapBuilder,
  createIdentityMapEraser,
  createIdentityMapIndex,
  createSyncStateStore,
  identityMapKeys,
} from '@ingest/domain';
import { type Component, createMetricsRegistry, readDeadLetters, readTopicToEnd, sql, topicName } from '@ingest/platform';
import { testCredentialKeys, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryCrm, createStaticMappings, type MemoryCrm } from '../adapters/memory-crm.fixture.js';
import { createCrmSink } from '../crm-sink.js';
import { everyKindMapping, TEST_PARK } from '../crm-sink.fixture.js';

const KEY_PREFIX = `t${uniqueSuffix()}:`;
const WAIT_MS = 4_000;
let gw: GatewayFixture;
let parts: Component[] = [];
let sink: Component;
let baseUrl: string;
const crms = new Map<string, MemoryCrm>();
const accounts: { id: string; apiKey: string }[] = [];
const index = () => createIdentityMapIndex({ redis: gw.redis, keyPrefix: KEY_PREFIX });
const syncStates = () => createSyncStateStore({ redis: gw.redis, keyPrefix: KEY_PREFIX });

beforeAll(async () => {
  gw = await createGatewayFixture();
  for (let i = 0; i < 6; i++) {
    const { account, apiKey } = await gw.newAccount('pro');
    accounts.push({ id: account.id, apiKey });
    crms.set(account.id, createMemoryCrm());
  }
  parts = await startProcessorFor(gw, 'identity-map', { redisKeyPrefix: KEY_PREFIX });
  sink = createCrmSink({
    kafka: gw.kafka.kafka,
    producer: gw.producer,
    redis: gw.redis,
    mappings: createStaticMappings(
      Object.fromEntries(
        accounts.map((a) => [a.id, { mapping: everyKindMapping(`${a.id}-crm`), credential: { type: 'hubspot', accessToken: a.id } satisfies CrmCredential }]),
      ),
    ),
    openCredential: testCredentialKeys().opener,
    createAdapter: (credential) => (crms.get(credential.type === 'hubspot' ? credential.accessToken : '') as MemoryCrm).adapter,
    logger: testLogger(),
    metrics: createMetricsRegistry('identity-map-sink'),
    topicPrefix: gw.kafka.prefix,
    groupId: `crm-sink-${uniqueSuffix()}`,
    redisKeyPrefix: KEY_PREFIX,
    ttl: { ledgerSeconds: 3600, recordStateSeconds: 3600, syncStateSeconds: 3600 },
    coalesce: { windowMs: 200, maxRecords: 50 },
    rate: { ratePerSecond: 50, burst: 20 },
    retry: { maxAttempts: 5, budgetMs: 30_000, baseDelayMs: 50, maxDelayMs: 400 },
    maxUnfinishedPerPartition: 500,
    park: TEST_PARK,
    identityWait: { waitMs: WAIT_MS, maxPerAccount: 1_000, pollMs: 200 },
  });
  await sink.start();
  baseUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
}, 90_000);

afterAll(async () => {
  await sink?.stop();
  for (const part of [...parts].reverse()) await part.stop();
  const keys = await gw.redis.keys(`${KEY_PREFIX}*`);
  if (keys.length > 0) await gw.redis.del(...keys);
  await gw?.close();
});

async function batch(apiKey: string, messages: Record<string, unknown>[]) {
  const res = await gw.app.inject({
    method: 'POST',
    url: '/v1/batch',
    headers: { authorization: `Bearer ${apiKey}` },
    payload: { batch: messages },
    remoteAddress: randomClientIp(),
  });
  expect(res.statusCode, res.body).toBe(200);
}

async function states(accountId: string, eventIds: string[], done: (state: string) => boolean, timeoutMs = 30_000) {
  const store = syncStates();
  return waitFor(
    async () => {
      const found = await Promise.all(eventIds.map((id) => store.read(accountId, id)));
      const shown = found.map((s, i) => `${eventIds[i]}=${s.state}${s.reason ? `:${s.reason}` : ''}`);
      if (!found.every((s) => done(s.state))) throw new Error(`sync states so far: ${shown.join(', ')}`);
      return found;
    },
    { description: `sync states of ${eventIds.length} events`, timeoutMs },
  );
}

async function storedEmails(accountId: string, expected: number) {
  return waitFor(
    async () => {
      const rows = await gw.clickhouse.ch.query<{ event_id: string; email: string }>(
        sql`SELECT event_id, email FROM events FINAL WHERE account_id = ${accountId} ORDER BY event_id`,
      );
      if (rows.length < expected) throw new Error(`stored so far: ${JSON.stringify(rows)}`);
      return Object.fromEntries(rows.map((r) => [r.event_id, r.email]));
    },
    { description: `${expected} stored events`, timeoutMs: 30_000 },
  );
}

describe('the identity map', () => {
  it('@segment/analytics-node: identify then tracks; the tracks are stored with the email and synced to the CRM with it', async () => {
    const { id, apiKey } = accounts[0] as { id: string; apiKey: string };
    const analytics = new Analytics({ writeKey: apiKey, host: baseUrl, flushAt: 1, flushInterval: 20 });
    analytics.identify({ userId: 'u-ada', traits: { email: 'Ada@Acme.io' }, messageId: 'ident-1' });
    await analytics.flush();
    const tracks = [0, 1, 2].map((i) => `track-${i}`);
    const sdk = new Analytics({ writeKey: apiKey, host: baseUrl, flushAt: 20, flushInterval: 50 });
    for (const [i, messageId] of tracks.entries()) sdk.track({ userId: 'u-ada', event: 'Page Viewed', properties: { path: `/p${i}` }, messageId });
    await sdk.closeAndFlush({ timeout: 20_000 });
    await analytics.closeAndFlush({ timeout: 20_000 });

    const emails = await storedEmails(id, 4);
    expect(emails).toMatchObject({ 'ident-1': 'ada@acme.io', 'track-0': 'ada@acme.io', 'track-1': 'ada@acme.io', 'track-2': 'ada@acme.io' });
    await states(id, tracks, (s) => s === 'synced');
    expect(crms.get(id)?.record('contact', 'ada@acme.io')).toMatchObject({ page_views: 3 });
  }, 60_000);

  it('an anonymous track stored before its identify (keyed a:<anonymousId>, the identify u:<userId>) is synced once the identify arrives; one never identified is skipped after the bound', async () => {
    const { id, apiKey } = accounts[1] as { id: string; apiKey: string };
    await batch(apiKey, [
      { type: 'track', anonymousId: 'anon-late', event: 'Page Viewed', properties: { path: '/early' }, messageId: 'early-1' },
      { type: 'track', userId: 'u-never', event: 'Page Viewed', properties: { path: '/x' }, messageId: 'never-1' },
    ]);
    // Stored without an email, waiting in the sink.
    expect(await storedEmails(id, 2)).toEqual({ 'early-1': '', 'never-1': '' });
    expect((await syncStates().read(id, 'early-1')).state).toBe('pending');
    await batch(apiKey, [{ type: 'identify', userId: 'u-late', anonymousId: 'anon-late', traits: { email: 'late@acme.io' }, messageId: 'late-ident' }]);
    const [early] = await states(id, ['early-1'], (s) => s !== 'pending');
    expect(early?.state).toBe('synced');
    expect(crms.get(id)?.record('contact', 'late@acme.io')).toMatchObject({ page_views: 1, pages: '/early' });
    const [never] = await states(id, ['never-1'], (s) => s !== 'pending', WAIT_MS + 20_000);
    expect(never).toMatchObject({ state: 'skipped', reason: 'identity_unresolved' });
  }, 60_000);

  it('an alias links an anonymous id to its user; an alias that would merge two known people is refused and dead-lettered, the event stored', async () => {
    const { id, apiKey } = accounts[2] as { id: string; apiKey: string };
    await batch(apiKey, [
      { type: 'identify', userId: 'u-bo', traits: { email: 'bo@acme.io' }, messageId: 'bo-ident' },
      { type: 'identify', userId: 'u-cy', traits: { email: 'cy@acme.io' }, messageId: 'cy-ident' },
    ]);
    await storedEmails(id, 2);
    await batch(apiKey, [{ type: 'alias', userId: 'u-bo', previousId: 'anon-bo', messageId: 'bo-alias' }]);
    await storedEmails(id, 3);
    await batch(apiKey, [
      { type: 'track', anonymousId: 'anon-bo', event: 'Page Viewed', properties: { path: '/a' }, messageId: 'bo-anon-track' },
      { type: 'alias', userId: 'u-cy', previousId: 'u-bo', messageId: 'bad-alias' },
    ]);
    const emails = await storedEmails(id, 5);
    expect(emails['bo-anon-track']).toBe('bo@acme.io');
    // The refused alias is stored (about its own user, cy), only the link is not made.
    expect(emails['bad-alias']).toBe('cy@acme.io');
    const letters = await waitFor(
      async () => {
        const found = await readDeadLetters(gw.kafka.kafka, topicName(gw.kafka.prefix, 'deadLetters'), {
          limit: 50,
          logger: testLogger(),
          filter: (e) => e.code === 'identity_conflict',
        });
        const mine = found.filter((l) => l.reason.includes(`account ${id} `));
        if (mine.length === 0) throw new Error(`identity_conflict letters so far: ${found.length}`);
        return mine;
      },
      { description: 'the refused alias in the dead letters', timeoutMs: 30_000 },
    );
    expect(letters[0]?.reason).toContain('event bad-alias');
    // Not merged: cy keeps cy's email, and bo's entry is unchanged.
    const map = await index().get(id, ['u:u-cy', 'u:u-bo', 'a:u-bo']);
    expect(map.get('u:u-cy')?.email).toBe('cy@acme.io');
    expect(map.get('u:u-bo')?.email).toBe('bo@acme.io');
    expect(map.get('a:u-bo')).toBeUndefined();
  }, 60_000);

  it('erasure removes the map entries of the erased email (tombstones, Redis); later userId-only events are not joined to it', async () => {
    const { id, apiKey } = accounts[3] as { id: string; apiKey: string };
    await batch(apiKey, [{ type: 'identify', userId: 'u-gone', traits: { email: 'gone@acme.io' }, messageId: 'gone-ident' }]);
    await storedEmails(id, 1);
    const idx = index();
    const topic = topicName(gw.kafka.prefix, 'identities');
    const eraser = createIdentityMapEraser({
      index: idx,
      builder: createIdentityMapBuilder({ kafka: gw.kafka.kafka, topic, index: idx, logger: testLogger() }),
      producer: gw.producer,
      topic,
    });
    expect(await eraser.erase(id, 'email', 'gone@acme.io')).toBe(1);
    expect((await idx.get(id, ['u:u-gone'])).size).toBe(0);
    const records: { value: number }[] = [];
    await readTopicToEnd(gw.kafka.kafka, {
      topic,
      logger: testLogger(),
      onMessage: (m) => (m.key?.toString() === `${id}:u:u-gone` ? records.push({ value: m.value?.length ?? 0 }) : undefined),
    });
    // The identify's record, then its tombstone (no value): compaction removes the key.
    expect(records.at(-1)).toEqual({ value: 0 });
    expect(records.length).toBeGreaterThanOrEqual(2);
    await batch(apiKey, [{ type: 'track', userId: 'u-gone', event: 'Page Viewed', properties: { path: '/after' }, messageId: 'gone-after' }]);
    expect((await storedEmails(id, 2))['gone-after']).toBe('');
  }, 60_000);

  it('a realistic trace (identify once, then many tracks; some anonymous, some aliased later): the share of events that reach the CRM', async () => {
    const { id, apiKey } = accounts[5] as { id: string; apiKey: string };
    const trace: Record<string, unknown>[] = [];
    let n = 0;
    const page = (who: Record<string, string>) =>
      trace.push({ type: 'track', ...who, event: 'Page Viewed', properties: { path: `/p${n}` }, messageId: `trace-${n++}` });
    // 20 users: 2 anonymous page views, identify (both ids), 8 tracks by userId.
    for (let u = 0; u < 20; u++) {
      for (let i = 0; i < 2; i++) page({ anonymousId: `anon-${u}` });
      trace.push({ type: 'identify', userId: `user-${u}`, anonymousId: `anon-${u}`, traits: { email: `user${u}@trace.io` }, messageId: `trace-ident-${u}` });
      for (let i = 0; i < 8; i++) page({ userId: `user-${u}` });
    }
    // 5 visitors who never sign up: 3 anonymous page views each.
    for (let v = 0; v < 5; v++) for (let i = 0; i < 3; i++) page({ anonymousId: `visitor-${v}` });
    // 5 users known by an identify without their device id, linked later by an alias.
    for (let a = 0; a < 5; a++) {
      for (let i = 0; i < 3; i++) page({ anonymousId: `device-${a}` });
      trace.push({ type: 'identify', userId: `later-${a}`, traits: { email: `later${a}@trace.io` }, messageId: `trace-later-ident-${a}` });
      trace.push({ type: 'alias', userId: `later-${a}`, previousId: `device-${a}`, messageId: `trace-alias-${a}` });
    }
    for (let i = 0; i < trace.length; i += 100) await batch(apiKey, trace.slice(i, i + 100));
    const tracks = trace.filter((m) => m.type === 'track').map((m) => m.messageId as string);
    const settled = await states(id, tracks, (s) => s !== 'pending', WAIT_MS + 40_000);
    const synced = settled.filter((s) => s.state === 'synced').length;
    const share = synced / tracks.length;
    process.stdout.write(`identity map, realistic trace: ${synced} of ${tracks.length} page views reached the CRM (${(share * 100).toFixed(1)}%)\n`);
    // Every page view of an identified or aliased person reaches it; the 15 of visitors never identified do not.
    expect(synced).toBe(tracks.length - 15);
    expect(settled.filter((s) => s.state === 'skipped').every((s) => s.reason === 'identity_unresolved')).toBe(true);
  }, 90_000);

  it('when Redis lost the index (marker and entries gone) it is rebuilt from the topic', async () => {
    const { id, apiKey } = accounts[4] as { id: string; apiKey: string };
    await batch(apiKey, [{ type: 'identify', userId: 'u-kept', traits: { email: 'kept@acme.io' }, messageId: 'kept-ident' }]);
    await storedEmails(id, 1);
    const keys = identityMapKeys(KEY_PREFIX);
    await waitFor(async () => (await gw.redis.exists(keys.built)) === 1 || undefined, { description: 'the marker' });
    await gw.redis.del(keys.map(id), keys.built);
    // The next Segment message makes the processor look (at most every 5 s) and rebuild.
    await waitFor(
      async () => {
        await batch(apiKey, [{ type: 'track', userId: 'u-kept', event: 'Page Viewed', properties: { path: '/r' }, messageId: `kept-${uniqueSuffix()}` }]);
        const entry = (await index().get(id, ['u:u-kept'])).get('u:u-kept');
        if (entry?.email !== 'kept@acme.io' || (await gw.redis.exists(keys.built)) !== 1) throw new Error(`entry so far: ${JSON.stringify(entry)}`);
        return entry;
      },
      { description: 'the rebuilt entry', timeoutMs: 30_000, intervalMs: 1_000 },
    );
  }, 60_000);
});
